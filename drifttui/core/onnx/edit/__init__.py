"""Every edit of an ONNX graph, each on a copy made by ``base.copy_model`` and saved by ``io.save_model``: the
verified patches applied by kind (``patches``, with ``rewriting``'s shared helpers and ``restore``'s values put
back), and by what they change, mirroring ``causes/propose``: ``lowerings/`` (an op lowered as torch computes it),
``numerics/`` (the origin computed in another precision), ``keep/`` (nodes of a reduced-precision file kept in
float32, or re-quantized) and ``graft/`` (a re-exported module spliced in); the views the plan's round trips
give a value (``absorbed_views``, ``orphan_steps``) and the examples' drift injection (``surgery``)."""
