"""Graph edit: a remainder lowered as ``a - Floor(a / b) * b`` computed as torch computes it, through ``fmod``.

Both exporters lower ``torch.remainder`` (and ``%``) of floats as ``a - Floor(a / b) * b``: the formula torch's
own CPU kernel used until pytorch/pytorch#38293 ("Fix precision issues in CPU remainder", after #37743 and
#24861: ``torch.remainder(1e9, pi)`` gave -64).  When ``|a / b|`` is large the product ``Floor(a / b) * b``
is rounded to float at ``a``'s magnitude and the difference keeps only that rounding (a phase ``t * omega``
wrapped to one period, a large time value taken modulo a period: 1e-3 .. 1 off where torch is exact).  torch
since computes ``fmod(a, b)``, exact in floating point, plus ``b`` where that is not 0 and its sign differs
from ``b``'s.  ``fmod_remainder`` rewrites the ``Sub`` of that pattern as ``Mod(a, b, fmod=1)`` with the same
sign correction, under the Sub's output name (ValueError when the node is not such a remainder).  A scalar ``a``
(``torch.remainder(-1e4, b)``) may reach the Div and the Sub as two Constant nodes of one value (the TorchScript
exporter writes a Constant per use): the same operand.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.edit.rewriting import input_dtype, same_value, splice_sorted


def _producer(model: Any, value: str) -> Optional[Any]:
    return next((n for n in model.graph.node if value in n.output), None)


def remainder_of(model: Any, node: Any) -> Optional[tuple[str, str]]:
    """``(a, b)`` when ``node`` is the ``Sub`` of ``a - Floor(a / b) * b``; None otherwise."""
    if node.op_type != "Sub" or len(node.input) != 2:
        return None
    mul = _producer(model, node.input[1])
    if mul is None or mul.op_type != "Mul":
        return None
    for k in (0, 1):
        floor = _producer(model, mul.input[k])
        div = _producer(model, floor.input[0]) if floor is not None and floor.op_type == "Floor" else None
        if div is not None and div.op_type == "Div" and same_value(model, div.input[0], node.input[0]):
            return div.input[0], div.input[1]
    return None


def apply_fmod_remainder(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = next((n for n in model.graph.node if n.name == spec["node"]), None)
    found = remainder_of(model, node) if node is not None else None
    if found is None:
        raise ValueError(f"{spec['node']} is not a remainder a - Floor(a / b) * b")
    a, b = found
    dtype = input_dtype(model, node.output[0])
    if np.dtype(dtype).kind != "f":
        raise ValueError(f"{node.name} is not a float remainder")
    p = f"{node.name or node.output[0]}/drifttui_rem"

    def op(kind: str, ins: list[str], out: str, **kw: Any) -> Any:
        return helper.make_node(kind, ins, [f"{p}/{out}"], name=f"{p}/{out}", **kw)

    new = [op("Mod", [a, b], "mod", fmod=1), op("Equal", [f"{p}/mod", f"{p}/zero"], "mod0"),
           op("Not", [f"{p}/mod0"], "modnz"), op("Less", [b, f"{p}/zero"], "bneg"),
           op("Less", [f"{p}/mod", f"{p}/zero"], "mneg"), op("Xor", [f"{p}/bneg", f"{p}/mneg"], "signs"),
           op("And", [f"{p}/modnz", f"{p}/signs"], "adj"), op("Add", [f"{p}/mod", b], "moved")]
    new.append(helper.make_node("Where", [f"{p}/adj", f"{p}/moved", f"{p}/mod"], [node.output[0]],
                                name=f"{p}/remainder"))
    splice_sorted(model, new, [numpy_helper.from_array(np.asarray(0.0, dtype=dtype), f"{p}/zero")],
                  anchor=node, drop=[node])


APPLY = {"fmod_remainder": apply_fmod_remainder}
