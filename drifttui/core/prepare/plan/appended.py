"""An op the deployed file appends to a layer's value, which the reference does not compute: the layer's.

The transfer (matching.py) pairs each reference value with the deployed value closest to it.  When the
deployed file multiplies a layer's output by a constant nobody else reads it without (a ``Mul`` after an
int8 Linear's output, named and scoped like it), the unscaled value is the closest and would be paired:
the ``Mul`` then falls in the next layer's nodes, which is named for a drift it did not make.

A deployed value ``D`` paired with reference value ``R`` hands its layer's output on through the constant
op when: ``D``'s only reader is an elementwise ``Mul`` / ``Div`` / ``Add`` / ``Sub`` of ``D`` and a scalar
constant, ``D`` is not a graph output, the op's output is not itself paired, and the reference has no
scalar constant that op could be a rewrite of (the same factor, or its inverse for a ``Div``; the same
term or its negative for a ``Sub``): a tool that moved a scale (attention's ``1/sqrt(d)``) keeps it in
the reference somewhere, a constant that is in neither the model nor the reference is the file's own.
The pair then moves to the op's output: the layer's own nodes include the op, and what the layer hands on
is what its readers read.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.graph import tensor_array
from drifttui.core.prepare.plan.closeness import Match, err

ELEMENTWISE = ("Mul", "Div", "Add", "Sub")
SAME = 1e-3           # a scalar of the reference "is" the op's constant within this relative distance


def _scalar(index: Any, name: str) -> Optional[float]:
    if not index.is_static(name):
        return None
    a = tensor_array(index, name)
    if a is None or a.size != 1 or a.dtype.kind != "f":
        return None
    v = float(a.reshape(-1)[0])
    return v if np.isfinite(v) else None


def _scalars(index: Any) -> list[float]:
    return [v for name in index.constant_tensors() if (v := _scalar(index, name)) is not None]


def _appended(dep: Any, value: str) -> Optional[tuple[str, float, str]]:
    """(the op's output, its constant, its op type) when ``value``'s only reader is an elementwise op by a
    scalar constant (the value first for ``Div`` / ``Sub``)."""
    readers = dep.consumers.get(value, [])
    if len(readers) != 1 or value in dep.graph_outputs:
        return None
    node = dep.nodes[readers[0]]
    if node.op_type not in ELEMENTWISE or len(node.inputs) != 2 or len(node.outputs) != 1:
        return None
    other = [i for i in node.inputs if i != value]
    if len(other) != 1 or (node.op_type in ("Div", "Sub") and node.inputs[0] != value):
        return None
    c = _scalar(dep, other[0])
    return (node.outputs[0], c, node.op_type) if c is not None else None


def _in_reference(c: float, op: str, ref_scalars: list[float]) -> bool:
    cands = [c, 1.0 / c if c else c] if op in ("Mul", "Div") else [c, -c]
    return any(abs(s - x) <= SAME * max(abs(x), 1e-12) for s in ref_scalars for x in cands)


def appended_ops(ref: Any, dep: Any, matches: dict[str, Match], ref_vals: dict[str, np.ndarray],
                 dep_vals: dict[str, np.ndarray]) -> dict[str, Match]:
    """``matches`` with each pair moved past a constant op the deployed file appends (module docstring)."""
    taken = {m.value for m in matches.values()}
    ref_scalars: Optional[list[float]] = None
    out = dict(matches)
    for r, m in matches.items():
        if m.perm is not None:
            continue
        found = _appended(dep, m.value)
        if found is None or found[0] in taken or found[0] not in dep_vals or r not in ref_vals:
            continue
        if ref_scalars is None:
            ref_scalars = _scalars(ref)
        value, c, op = found
        if _in_reference(c, op, ref_scalars) or dep_vals[value].shape != dep_vals[m.value].shape:
            continue
        a = ref_vals[r]
        e = err(dep_vals[value], a, float(np.max(np.abs(a), initial=0.0)))
        out[r] = Match(value, e, e <= 0.0)
        taken.add(value)
    return out
