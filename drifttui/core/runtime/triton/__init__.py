"""The served model: a Triton model repository (``config.pbtxt``, the served file, the settings the
onnxruntime backend applies) and a live Triton server through tritonclient (docs/triton.md)."""
