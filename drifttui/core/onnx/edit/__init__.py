"""Every edit of an ONNX graph, each on a copy made by ``base.copy_model`` and saved by ``io.save_model``:
keep-in-float32 (``keep_float32``, ``keep_qoperator``), the verified patches (``patches``), rewrites
(``rewriting``, ``stable_forms``, ``resize_gather``, ``ort_workarounds``), grafts (``graft``) and the
examples' drift injection (``surgery``)."""
