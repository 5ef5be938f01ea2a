"""The ONNX vocabulary: the graph index (``graph``), the mapped external data (``weights``), the one
save rule (``io``), topological order (``order``), the views of quantized files (``qviews``,
``qdq_pairs``, ``nbits``) and every graph edit (``edit/``)."""
