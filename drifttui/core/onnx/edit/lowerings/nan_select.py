"""Graph edit for a selection op that skips NaN where torch propagates it (issue 30).

ONNX Runtime's selection kernels compare with ``>`` / ``<``, which is false for NaN: ``MaxPool``,
``GlobalMaxPool``, ``ReduceMax`` and ``ReduceMin`` drop a NaN unless it comes first, ``ArgMax`` and
``ArgMin`` never pick it (unless first).  torch propagates it: a window or row that holds a NaN is
NaN (``max_pool2d``, ``amax``, ``max(dim)``), and ``argmax`` / ``argmin`` give the first NaN's index.
``nan_propagate`` makes the op see NaN the way torch does, keeping the node and its output name:

* value ops: ``y' = Where(op(Cast(IsNaN(x))) > 0, NaN, y)``, ``op`` the same op with the same
  attributes and axes (a ``ReduceMin``'s mask is a ``ReduceMax`` over the same axes);
* index ops: ``i' = Where(ReduceMax(Cast(IsNaN(x)), axis) > 0, ArgMax(Cast(IsNaN(x))), i)``: the first
  NaN's index where the row holds one (ties broken as torch: the first), the op's index elsewhere.

``TopK``, ``Max``/``Min``, ``Clip`` and ``Relu`` already propagate NaN in ONNX Runtime 1.32: not
rewritten.  A ``MaxPool``'s second output (its indices) is left as the kernel computes it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, rerouted, splice_sorted

VALUE_OPS = {"MaxPool": "MaxPool", "GlobalMaxPool": "GlobalMaxPool", "ReduceMax": "ReduceMax",
             "ReduceMin": "ReduceMax"}       # op -> the op that tells "the window / row holds a NaN"
INDEX_OPS = ("ArgMax", "ArgMin")
SELECT_OPS = (*VALUE_OPS, *INDEX_OPS)
AXES_AS_INPUT = 18                           # ReduceMax reads its axes as an input from opset 18


def ai_onnx_opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 18)


def apply_nan_propagate(model: Any, spec: dict[str, Any]) -> None:
    """The rewrite of ``spec["node"]``, or of each of ``spec["nodes"]`` (several selection nodes of one
    origin fed the same NaN: ``torch.max(x, dim)``'s values and indices)."""
    for name in spec.get("nodes") or [spec["node"]]:
        _propagate(model, name)


class NanMask(NamedTuple):
    """A node rewired for a NaN rewrite: its output renamed ``<p>/raw``, ``<p>/mask`` (1 where the read input is
    NaN, in its float type) and ``<p>/zero`` built; the caller adds the nodes that pick the output."""

    node: Any
    p: str              # the prefix of every name the rewrite adds
    out: str            # the node's original output, which the rewrite's last node must write
    dtype: Any
    new: list
    inits: list


def nan_mask(model: Any, name: str, ops: tuple, index: int, what: str) -> NanMask:
    """The node ``name`` (one of ``ops``: ``what`` says what it is) rewired, its input ``index`` masked where NaN."""
    from onnx import helper, numpy_helper

    node = find_node(model, name)
    if node.op_type not in ops or len(node.input) <= index:
        raise ValueError(f"{node.name} is a {node.op_type}, not {what}")
    x, out = node.input[index], node.output[0]
    dtype = np.dtype(input_dtype(model, x))
    if dtype.kind != "f":
        raise ValueError(f"{node.name}'s {'grid' if index else 'input'} is not a float: it holds no NaN")
    out, p = rerouted(node, "nan")
    new = [helper.make_node("IsNaN", [x], [f"{p}/isnan"], name=f"{p}/isnan"),
           helper.make_node("Cast", [f"{p}/isnan"], [f"{p}/mask"], name=f"{p}/cast",
                            to=helper.np_dtype_to_tensor_dtype(dtype))]
    return NanMask(node, p, out, dtype, new, [numpy_helper.from_array(np.zeros((), dtype), f"{p}/zero")])


def splice(model: Any, m: NanMask) -> None:
    """The rewrite's nodes scoped like the node they rewrite, in graph order, with their constants."""
    splice_sorted(model, m.new, m.inits, anchor=m.node)


def _propagate(model: Any, name: str) -> None:
    from onnx import helper, numpy_helper

    m = nan_mask(model, name, SELECT_OPS, 0, "a selection op that skips NaN")
    node, p, out, dtype, new, inits = m
    if node.op_type in VALUE_OPS:
        new.append(helper.make_node(VALUE_OPS[node.op_type], [f"{p}/mask", *node.input[1:]], [f"{p}/any"],
                                    name=f"{p}/window", **_attrs(node)))
        inits.append(numpy_helper.from_array(np.full((), np.nan, dtype), f"{p}/nan"))
        picked = f"{p}/nan"
    else:
        a = _attrs(node)
        axis, keep = int(a.get("axis", 0)), int(a.get("keepdims", 1))
        new.append(helper.make_node("ArgMax", [f"{p}/mask"], [f"{p}/first"], name=f"{p}/first", axis=axis,
                                    keepdims=keep))
        new.extend(_reduce_max(model, f"{p}/mask", f"{p}/any", f"{p}/row", axis, keep, inits))
        picked = f"{p}/first"
    new += [helper.make_node("Greater", [f"{p}/any", f"{p}/zero"], [f"{p}/has"], name=f"{p}/has"),
            helper.make_node("Where", [f"{p}/has", picked, f"{p}/raw"], [out], name=f"{p}/where")]
    splice(model, m)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _reduce_max(model: Any, x: str, y: str, name: str, axis: int, keep: int, inits: list[Any]) -> list[Any]:
    """``ReduceMax(x, axes=[axis], keepdims=keep)`` in the model's opset's form."""
    from onnx import helper, numpy_helper

    if ai_onnx_opset(model) >= AXES_AS_INPUT:
        inits.append(numpy_helper.from_array(np.asarray([axis], np.int64), f"{name}/axes"))
        return [helper.make_node("ReduceMax", [x, f"{name}/axes"], [y], name=name, keepdims=keep)]
    return [helper.make_node("ReduceMax", [x], [y], name=name, axes=[axis], keepdims=keep)]


APPLY = {"nan_propagate": apply_nan_propagate}
