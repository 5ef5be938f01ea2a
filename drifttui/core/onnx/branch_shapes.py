"""The static shapes a file declares on its subgraphs' outputs (If branches, Loop / Scan bodies), cleared in
drifttui's in-memory copy.  They are hints, and an exporter can write them wrong: TorchScript's ``scatter_reduce``
wraps its result in an ``If`` (a rank-0 input squeezed, else an Identity) whose else branch declares the flattened
shape ({48} for a (6, 8) value).  At ONNX Runtime's default level the constant condition is folded and the file runs;
at ``disable`` (drifttui's capture level) the If runs, ONNX Runtime allocates the branch's output by the declared
shape and fails ("has shape {48} but the computed output shape for this run is {6,8}").  Without the hint ONNX
Runtime takes the shape the branch computes; the numbers are the file's.  The element types stay; the user's file
is never changed."""
from __future__ import annotations

from typing import Any


def clear_branch_shapes(model: Any) -> int:
    """Clear the declared shape of every subgraph output in ``model`` (any depth); return how many were cleared."""
    return _clear(model.graph)


def _clear(graph: Any) -> int:
    import onnx

    cleared = 0
    for node in graph.node:
        for attr in node.attribute:
            subs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subs:
                for out in sub.output:
                    if out.type.HasField("tensor_type") and out.type.tensor_type.HasField("shape"):
                        out.type.tensor_type.ClearField("shape")
                        cleared += 1
                cleared += _clear(sub)
    return cleared
