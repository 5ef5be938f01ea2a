"""What the user takes away: an ONNX test case (``repro``), a repaired copy (``repair``) and the
keep-in-float32 list of a reduced-precision file (``keep_list``)."""
