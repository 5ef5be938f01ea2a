"""Graph edits that compute an op as torch computes it: singular points (``singular``, ``remainder``), NaN torch
propagates (``nan_select``, ``nan_grid``), stable forms (``stable_forms``), exact integer powers (``int_pow``),
torch's quantisation (``quantize_torch``), where a Resize samples (``resize_map``, ``resize_gather``), a size
computed at runtime (``runtime_size``), a mask's positions (``masked_positions``) and equivalent rewrites around
ONNX Runtime kernel deviations (``ort_workarounds``)."""
