"""The mapping plan: which ONNX values carry each module call's outputs.  ``plan.py`` holds the Plan
classes; ``mapping.build_plan`` is the plan's one writer.  ``pairing``, ``folding`` and ``repeats``
read the graph and the trace and return edits (pairings, folds, call splits) that build_plan applies."""
