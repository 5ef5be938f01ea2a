"""A non-strict comparison written as the negation of a strict one (issue 30): ``Not(Less(a, b))`` for ``a >= b``.

``GreaterOrEqual`` and ``LessOrEqual`` are opset-12 ops: below, the TorchScript exporter lowers ``a >= b`` as
``Not(Less(a, b))`` and ``a <= b`` as ``Not(Greater(a, b))`` (``symbolic_opset9.ge`` / ``le``;
pytorch/pytorch#38226 added the opset-12 ops).  The two agree on numbers but not on NaN: every comparison with
NaN is false, so ``Not(Less(NaN, b))`` is true where torch's ``NaN >= b`` is false.  A validity mask
``(d >= near) & (d <= far)`` lets a NaN through.

``nan_compare`` rewrites the negation as the comparison torch makes, with ops the file's opset has:
``Or(Greater(a, b), Equal(a, b))`` for ``Not(Less(a, b))`` and ``Or(Less(a, b), Equal(a, b))`` for
``Not(Greater(a, b))`` (``GreaterOrEqual`` / ``LessOrEqual`` themselves from opset 12), false on NaN.  The
``Not``'s output keeps its name; the strict comparison stays for its other readers.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, splice_sorted

NEGATED = {"Less": ("Greater", "GreaterOrEqual", "ge"), "Greater": ("Less", "LessOrEqual", "le")}


def negated_comparison(model: Any, node: Any) -> Optional[Any]:
    """The ``Less`` / ``Greater`` of float values whose output ``node`` (a ``Not``) negates, or None."""
    if node.op_type != "Not" or not node.input:
        return None
    cmp = next((n for n in model.graph.node if n.op_type in NEGATED and n.output and n.output[0] == node.input[0]),
               None)
    if cmp is None or len(cmp.input) != 2:
        return None
    try:
        kinds = {np.dtype(input_dtype(model, v)).kind for v in cmp.input}
    except (KeyError, TypeError, ValueError):
        return None
    return cmp if kinds == {"f"} else None


def apply_nan_compare(model: Any, spec: dict[str, Any]) -> None:
    """The rewrite of ``spec["node"]``, or of each of ``spec["nodes"]`` (the two ends of a range mask)."""
    for name in spec.get("nodes") or [spec["node"]]:
        _rewrite(model, find_node(model, name))


def _rewrite(model: Any, node: Any) -> None:
    from onnx import helper

    cmp = negated_comparison(model, node)
    if cmp is None:
        raise ValueError(f"{node.name} does not negate a float Less / Greater")
    strict, _, _ = NEGATED[cmp.op_type]
    a, b = cmp.input[0], cmp.input[1]
    p = f"{node.name or node.output[0]}/drifttui_nan_compare"
    new = [helper.make_node(strict, [a, b], [f"{p}/strict"], name=f"{p}/strict"),
           helper.make_node("Equal", [a, b], [f"{p}/equal"], name=f"{p}/equal"),
           helper.make_node("Or", [f"{p}/strict", f"{p}/equal"], [node.output[0]], name=f"{p}/or")]
    splice_sorted(model, new, anchor=node, drop=[node])


APPLY = {"nan_compare": apply_nan_compare}
