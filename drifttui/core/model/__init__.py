"""The user's side of a run: the model and input specs, loading (confined, weights_only), the inputs, the
Python API's in-memory objects, the export with either exporter, and byte sizes (units)."""
