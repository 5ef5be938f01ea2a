"""Graph edit: a pooling window taken from the example's size, computed as torch's windows of the runtime size
(``causes/propose/edits/frozen_window.py``).

``F.max_pool1d(h, h.size(2))`` traced by TorchScript, or ``F.adaptive_avg_pool1d(h, 4)`` lowered by the dynamo
exporter on a dim the file declares dynamic, become a ``MaxPool`` / ``AveragePool`` whose ``kernel_shape`` and
``strides`` hold the example's size (``T_example // n``): an attribute holds no runtime size.  At another length the
file pools ``n`` windows of the example's width where torch's ``n`` windows cover the whole runtime length.
``adaptive_window`` replaces the pool by torch's adaptive windows over each pooled axis, computed from the runtime
size ``L`` (torch's ``adaptive_*_pool``: window ``i`` is ``[floor(i L / n), ceil((i + 1) L / n))``; for ``n = 1`` the
global pool)::

    t = Range(0, L); start = (i * L) / n; end = ((i + 1) * L + n - 1) / n      (integers, i = 0 .. n-1)
    M = (t >= start) & (t < end)                                               # [n, L]
    max: ReduceMax(Where(M, x, -inf), last)    avg: ReduceSum(Where(M, x, 0), last) / (end - start)

one pooled axis at a time, moved last by a Transpose and back.  Spec: ``node`` (the pool), ``windows`` (``n`` per
spatial axis, in order; 0 leaves an axis of one-step windows as it is).  The pool's pads must be 0 (a padded window is
not an adaptive one).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _reduce(helper: Any, op: str, x: str, out: str, name: str, axes: str, opset: int) -> Any:
    """``op`` over the last axis without keeping it: axes as an input from opset 18 (ReduceSum from 13)."""
    if opset >= 18 or op == "ReduceSum":
        return helper.make_node(op, [x, axes], [out], name=name, keepdims=0)
    return helper.make_node(op, [x], [out], name=name, keepdims=0, axes=[-1])


def _axis(helper: Any, numpy_helper: Any, x: str, axis: int, rank: int, n: int, is_max: bool, p: str,
          opset: int) -> tuple[list[Any], list[Any], str]:
    """Nodes and initializers pooling ``x``'s ``axis`` into ``n`` adaptive windows: (nodes, inits, output)."""
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank)]
    i = np.arange(n, dtype=np.int64).reshape(n, 1)
    inits = [numpy_helper.from_array(i, f"{p}/i"), numpy_helper.from_array(i + 1, f"{p}/i1"),
             numpy_helper.from_array(np.asarray(n, np.int64), f"{p}/n"),
             numpy_helper.from_array(np.asarray(n - 1, np.int64), f"{p}/n1"),
             numpy_helper.from_array(np.asarray(0, np.int64), f"{p}/zero"),
             numpy_helper.from_array(np.asarray(1, np.int64), f"{p}/one"),
             numpy_helper.from_array(np.asarray([-2], np.int64), f"{p}/row"),
             numpy_helper.from_array(np.asarray(-np.inf if is_max else 0.0, np.float32), f"{p}/fill32")]
    mk = helper.make_node
    nodes = [mk("Shape", [x], [f"{p}/L1"], name=f"{p}/L1", start=axis, end=axis + 1),
             mk("Squeeze", [f"{p}/L1"], [f"{p}/L"], name=f"{p}/L"),
             mk("Range", [f"{p}/zero", f"{p}/L", f"{p}/one"], [f"{p}/t"], name=f"{p}/t"),
             mk("Mul", [f"{p}/i", f"{p}/L"], [f"{p}/iL"], name=f"{p}/iL"),
             mk("Div", [f"{p}/iL", f"{p}/n"], [f"{p}/start"], name=f"{p}/start"),
             mk("Mul", [f"{p}/i1", f"{p}/L"], [f"{p}/i1L"], name=f"{p}/i1L"),
             mk("Add", [f"{p}/i1L", f"{p}/n1"], [f"{p}/i1Lr"], name=f"{p}/i1Lr"),
             mk("Div", [f"{p}/i1Lr", f"{p}/n"], [f"{p}/end"], name=f"{p}/end"),
             mk("GreaterOrEqual", [f"{p}/t", f"{p}/start"], [f"{p}/ge"], name=f"{p}/ge"),
             mk("Less", [f"{p}/t", f"{p}/end"], [f"{p}/lt"], name=f"{p}/lt"),
             mk("And", [f"{p}/ge", f"{p}/lt"], [f"{p}/M"], name=f"{p}/M"),
             mk("Transpose", [x], [f"{p}/xt"], name=f"{p}/xt", perm=perm),
             mk("Unsqueeze", [f"{p}/xt", f"{p}/row"], [f"{p}/xr"], name=f"{p}/xr"),
             mk("CastLike", [f"{p}/fill32", x], [f"{p}/fill"], name=f"{p}/fill"),
             mk("Where", [f"{p}/M", f"{p}/xr", f"{p}/fill"], [f"{p}/masked"], name=f"{p}/masked")]
    if not is_max or opset >= 18:          # the reduced axis as an input
        inits.append(numpy_helper.from_array(np.asarray([-1], np.int64), f"{p}/last"))
    if is_max:
        nodes.append(_reduce(helper, "ReduceMax", f"{p}/masked", f"{p}/pooled", f"{p}/pooled", f"{p}/last", opset))
    else:
        nodes += [_reduce(helper, "ReduceSum", f"{p}/masked", f"{p}/sum", f"{p}/sum", f"{p}/last", opset),
                  mk("Sub", [f"{p}/end", f"{p}/start"], [f"{p}/count2"], name=f"{p}/count2"),
                  mk("Squeeze", [f"{p}/count2", f"{p}/last"], [f"{p}/count"], name=f"{p}/count"),
                  mk("CastLike", [f"{p}/count", x], [f"{p}/countf"], name=f"{p}/countf"),
                  mk("Div", [f"{p}/sum", f"{p}/countf"], [f"{p}/pooled"], name=f"{p}/pooled")]
    nodes.append(mk("Transpose", [f"{p}/pooled"], [f"{p}/out"], name=f"{p}/out", perm=back))
    return nodes, inits, f"{p}/out"


def apply_adaptive_window(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"])
    if node.op_type not in ("MaxPool", "AveragePool"):
        raise ValueError(f"{node.name} is not a MaxPool or AveragePool")
    if len(node.output) > 1 and any(node.output[1:]):
        raise ValueError(f"{node.name}'s indices are read: not a plain pool")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if any(attrs.get("pads", [])) or attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
        raise ValueError(f"{node.name} pads its windows: not an adaptive pool")
    opset = _opset(model)
    if opset < 15:
        raise ValueError(f"opset {opset}: the rewrite needs Shape(start, end) and CastLike (opset 15)")
    windows = [int(n) for n in spec["windows"]]
    rank = len(windows) + 2
    new, inits, value = [], [], node.input[0]
    for k, n in enumerate(windows):
        if n == 0:          # a window of one step (kernel 1, stride 1): each step its own window, at any size
            continue
        nodes, more, value = _axis(helper, numpy_helper, value, 2 + k, rank, n, node.op_type == "MaxPool",
                                   f"{node.name}/drifttui_window{k}", opset)
        new += nodes
        inits += more
    if not new:
        raise ValueError(f"{node.name}: no axis to pool")
    new[-1].output[0] = node.output[0]
    splice_sorted(model, new, inits, anchor=node, drop=[node])


APPLY = {"adaptive_window": apply_adaptive_window}
