"""Which pass of a graph optimizer moves the numbers: ONNX Runtime's transformers (``ort_passes``),
the generic bisection (``bisect_core``), the probe and its answer (``pass_bisect``), and the
setting that avoids the pass (``settings``).  A runtime primitive, not a stage: step 3 (explain)
and the stage bisect (``core/compose``) both use it."""
