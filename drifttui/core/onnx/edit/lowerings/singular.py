"""Graph edits for a lowering that decides a singular point otherwise than torch (issue 30).

torch defines its ops at their singular points: ``atan2(0, 0) = 0``, ``sign(NaN) = 0``, a softmax
over a fully masked row or a max over an empty bag is 0, ``atan2(+0, x < 0) = pi``.  An exporter's
lowering of the same op in ordinary ONNX ops (a Div, a Softmax, a ReduceMax, a comparison with 0)
often leaves those points undefined (NaN, inf) or on the other side of a boundary.  Two edits
compute what torch computes there without knowing the op:

* ``nonfinite_guard``: ``Where(IsNaN(y) or IsInf(y), c, y)`` on a node's output (``c`` the value
  torch gives at those points);
* ``nan_pass``: ``Where(IsNaN(x), x, y)`` on a node's output: the NaN of its input ``x`` carried through
  where the lowering returns a finite value (torch's elementwise ops give NaN for NaN in);
* ``boundary``: a strict comparison made non-strict or the reverse (``Greater`` <-> ``GreaterOrEqual``,
  ``Less`` <-> ``LessOrEqual``): the boundary point decided on the other side.

* ``fmod_floor``: ``Floor(Div(a, b))`` floors the quotient rounded to float; torch's floor division
  (and so its ``remainder``, ``a - b * (a // b)``) floors the exact one, through ``fmod``:
  ``((a - fmod(a, b)) / b``, one less where ``fmod`` and ``b`` differ in sign, rounded to the nearest
  whole number).  On multiples of ``b`` (``1.0 // 0.1`` is 9 in torch, ``Floor(1.0 / 0.1)`` 10) the two
  part by one, and a remainder by ``b``.  A float -> integer ``Cast`` of a float ``Div`` (TorchScript's float
  ``floor_divide``: it truncates the rounded quotient) is rewritten the same way, the Cast kept after it.

All keep the node's output name and rewrite the model in place (ValueError when they do not fit).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.base.dtypes import INT_ELEMS
from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, rerouted, splice_sorted

FLIP = {"Greater": "GreaterOrEqual", "GreaterOrEqual": "Greater", "Less": "LessOrEqual", "LessOrEqual": "Less"}


def apply_nonfinite_guard(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"])
    out = node.output[0]
    dtype = input_dtype(model, out)
    if np.dtype(dtype).kind != "f":
        raise ValueError(f"{node.name}'s output is not a float: no NaN or inf to guard")
    out, p = rerouted(node, "guard")
    new = [helper.make_node("IsNaN", [f"{p}/raw"], [f"{p}/nan"], name=f"{p}/isnan"),
           helper.make_node("IsInf", [f"{p}/raw"], [f"{p}/inf"], name=f"{p}/isinf"),
           helper.make_node("Or", [f"{p}/nan", f"{p}/inf"], [f"{p}/bad"], name=f"{p}/or"),
           helper.make_node("Where", [f"{p}/bad", f"{p}/c", f"{p}/raw"], [out], name=f"{p}/where")]
    splice_sorted(model, new, [numpy_helper.from_array(np.asarray(float(spec.get("value", 0.0)), dtype=dtype),
                                                       f"{p}/c")], anchor=node)


def apply_boundary(model: Any, spec: dict[str, Any]) -> None:
    node = find_node(model, spec["node"])
    if node.op_type not in FLIP:
        raise ValueError(f"{node.name} is a {node.op_type}, not a comparison")
    node.op_type = FLIP[node.op_type]


def floor_of_div(model: Any, node: Any) -> Any:
    """The Div whose output ``node`` floors (a Floor) or truncates (a Cast of a float Div to an integer), or None."""
    cast = node.op_type == "Cast" and any(a.name == "to" and a.i in INT_ELEMS for a in node.attribute)
    if node.op_type != "Floor" and not cast:
        return None
    div = next((n for n in model.graph.node if n.op_type == "Div" and n.output[0] == node.input[0]), None)
    return None if div is None or (cast and np.dtype(input_dtype(model, div.output[0])).kind != "f") else div


def apply_fmod_floor(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"])
    div = floor_of_div(model, node)
    if div is None:
        raise ValueError(f"{node.name} does not floor a Div")
    dtype = input_dtype(model, div.output[0])
    if np.dtype(dtype).kind != "f":
        raise ValueError(f"{div.name} is not a float division")
    a, b = div.input[0], div.input[1]
    p = f"{node.name or node.output[0]}/drifttui_fmod"
    c = {k: f"{p}/{k}" for k in ("zero", "half")}

    def op(kind: str, ins: list[str], out: str, **kw: Any) -> Any:
        return helper.make_node(kind, ins, [f"{p}/{out}"], name=f"{p}/{out}", **kw)

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    new = [op("Mod", [a, b], "mod", fmod=1), op("Sub", [a, f"{p}/mod"], "num"), op("Div", [f"{p}/num", b], "q"),
           op("Equal", [f"{p}/mod", c["zero"]], "mod0"), op("Not", [f"{p}/mod0"], "modnz"),
           op("Less", [b, c["zero"]], "bneg"), op("Less", [f"{p}/mod", c["zero"]], "mneg"),
           op("Xor", [f"{p}/bneg", f"{p}/mneg"], "signs"), op("And", [f"{p}/modnz", f"{p}/signs"], "adj"),
           op("Cast", [f"{p}/adj"], "adjf", to=elem), op("Sub", [f"{p}/q", f"{p}/adjf"], "q1"),
           op("Floor", [f"{p}/q1"], "fl"), op("Sub", [f"{p}/q1", f"{p}/fl"], "frac"),
           op("Greater", [f"{p}/frac", c["half"]], "up"), op("Cast", [f"{p}/up"], "upf", to=elem)]
    if node.op_type == "Cast":     # the floor, then the file's own Cast to its integer type
        new += [op("Add", [f"{p}/fl", f"{p}/upf"], "floordiv"),
                helper.make_node("Cast", [f"{p}/floordiv"], [node.output[0]], name=f"{p}/cast",
                                 to=next(a.i for a in node.attribute if a.name == "to"))]
    else:
        new.append(helper.make_node("Add", [f"{p}/fl", f"{p}/upf"], [node.output[0]], name=f"{p}/floordiv"))
    splice_sorted(model, new, [numpy_helper.from_array(np.asarray(0.0, dtype=dtype), c["zero"]),
                               numpy_helper.from_array(np.asarray(0.5, dtype=dtype), c["half"])],
                  anchor=node, drop=[node])


def apply_nan_pass(model: Any, spec: dict[str, Any]) -> None:
    """``Where(IsNaN(x), x, y)`` on a node's output: a NaN of ``x`` (``spec["source"]``) carried through,
    as torch's elementwise ops carry it, where the lowering returned a finite value."""
    from onnx import helper

    node = find_node(model, spec["node"])
    out, src = node.output[0], spec["source"]
    if np.dtype(input_dtype(model, out)).kind != "f" or np.dtype(input_dtype(model, src)).kind != "f":
        raise ValueError(f"{node.name}'s output or {src} is not a float: no NaN to carry")
    out, p = rerouted(node, "nan_pass")
    new = [helper.make_node("IsNaN", [src], [f"{p}/nan"], name=f"{p}/isnan"),
           helper.make_node("Where", [f"{p}/nan", src, f"{p}/raw"], [out], name=f"{p}/where")]
    splice_sorted(model, new, anchor=node)


APPLY = {"nonfinite_guard": apply_nonfinite_guard, "nan_pass": apply_nan_pass, "boundary": apply_boundary, "fmod_floor": apply_fmod_floor}
