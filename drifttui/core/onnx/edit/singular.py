"""Graph edits for a lowering that decides a singular point otherwise than torch (issue 30).

torch defines its ops at their singular points: ``atan2(0, 0) = 0``, ``sign(NaN) = 0``, a softmax
over a fully masked row or a max over an empty bag is 0, ``atan2(+0, x < 0) = pi``.  An exporter's
lowering of the same op in ordinary ONNX ops (a Div, a Softmax, a ReduceMax, a comparison with 0)
often leaves those points undefined (NaN, inf) or on the other side of a boundary.  Two edits
compute what torch computes there without knowing the op:

* ``nonfinite_guard``: ``Where(IsNaN(y) or IsInf(y), c, y)`` on a node's output (``c`` the value
  torch gives at those points);
* ``boundary``: a strict comparison made non-strict or the reverse (``Greater`` <-> ``GreaterOrEqual``,
  ``Less`` <-> ``LessOrEqual``): the boundary point decided on the other side.

Both keep the node's output name and rewrite the model in place (ValueError when they do not fit).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.graft import toposort
from drifttui.core.onnx.edit.rewriting import input_dtype, scoped

FLIP = {"Greater": "GreaterOrEqual", "GreaterOrEqual": "Greater", "Less": "LessOrEqual", "LessOrEqual": "Less"}


def _find(model: Any, name: str) -> Any:
    node = next((n for n in model.graph.node if n.name == name), None)
    if node is None:
        raise ValueError(f"no node named {name!r}")
    return node


def apply_nonfinite_guard(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = _find(model, spec["node"])
    out = node.output[0]
    dtype = input_dtype(model, out)
    if np.dtype(dtype).kind != "f":
        raise ValueError(f"{node.name}'s output is not a float: no NaN or inf to guard")
    p = f"{node.name or out}/drifttui_guard"
    node.output[0] = f"{p}/raw"
    new = [helper.make_node("IsNaN", [f"{p}/raw"], [f"{p}/nan"], name=f"{p}/isnan"),
           helper.make_node("IsInf", [f"{p}/raw"], [f"{p}/inf"], name=f"{p}/isinf"),
           helper.make_node("Or", [f"{p}/nan", f"{p}/inf"], [f"{p}/bad"], name=f"{p}/or"),
           helper.make_node("Where", [f"{p}/bad", f"{p}/c", f"{p}/raw"], [out], name=f"{p}/where")]
    scoped(node, new)
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(toposort(nodes + new))
    model.graph.initializer.append(numpy_helper.from_array(np.asarray(float(spec.get("value", 0.0)), dtype=dtype),
                                                           f"{p}/c"))


def apply_boundary(model: Any, spec: dict[str, Any]) -> None:
    node = _find(model, spec["node"])
    if node.op_type not in FLIP:
        raise ValueError(f"{node.name} is a {node.op_type}, not a comparison")
    node.op_type = FLIP[node.op_type]


APPLY = {"nonfinite_guard": apply_nonfinite_guard, "boundary": apply_boundary}
