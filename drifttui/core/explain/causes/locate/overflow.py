"""A lowering that is the function but overflows on the way (issue 30 point 3: the class by mechanism).

A dynamo file's wrong FX node (``fx_localise``) that returns inf or NaN where torch's value is finite is either another
function (a wrong formula, whose finite elements disagree too) or the same function in a form that is not stable
in float32: ``logaddexp2(a, b)`` as ``Log(Pow(2, a) + Pow(2, b)) / ln 2``, whose ``Pow`` turns a finite exponent of a
few hundred into inf where torch's max-shifted value is finite.  The second is told by two facts about the node's ONNX
nodes fed torch's values of their inputs: wherever their result is finite, it is torch's within the tolerance, and an
intermediate node turns finite inputs into inf (an overflow).  Its class is ``stability``, not ``lowering``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.explain.causes.locate.evaluate import run_ort


def overflow_node(group: Any, feeds: dict[str, np.ndarray], want: dict[str, np.ndarray], atol: float,
                  rtol: float) -> str:
    """``"Pow node_Pow_5"``: the first node of ``group`` (the ONNX nodes computing one FX node, as a model whose
    outputs are every value they produce: ``fx_localise._group_model``) that turns finite inputs into inf, where
    its outputs ``want`` (torch's values) are finite where the group's are not and the group's are torch's wherever
    finite; "" when it computes another function or nothing overflows."""
    mine = [n for n in group.graph.node if n.op_type != "Constant"]
    produced = [v for n in mine for v in n.output if v]
    try:
        got = run_ort(group, feeds, produced)
    except Exception:  # noqa: BLE001 - a group that does not run alone tells nothing
        return ""
    if not _same_function(want, got, atol, rtol):
        return ""
    vals = {**feeds, **got}
    for n in mine:
        ins = [np.asarray(vals[v]) for v in n.input if v in vals]
        if not all(a.dtype.kind != "f" or np.isfinite(a).all() for a in ins):
            continue
        if any(np.asarray(got[v]).dtype.kind == "f" and np.isinf(got[v]).any() for v in n.output if v in got):
            return f"{n.op_type} {n.name}"
    return ""


def _same_function(want: dict[str, np.ndarray], got: dict[str, np.ndarray], atol: float, rtol: float) -> bool:
    """Some output is inf or NaN where torch's is finite, and every output is torch's wherever both are finite."""
    made = False
    for v, w in want.items():
        g = got.get(v)
        w = np.asarray(w)
        if g is None or np.shape(g) != w.shape or w.dtype.kind != "f" or np.asarray(g).dtype.kind != "f":
            continue
        g = np.asarray(g, np.float64)
        w64 = w.astype(np.float64)
        made = made or bool((np.isfinite(w64) & ~np.isfinite(g)).any())
        both = np.isfinite(w64) & np.isfinite(g)
        scale = float(np.abs(w64[np.isfinite(w64)]).max(initial=0.0))
        if (np.abs(g[both] - w64[both]) > atol + rtol * scale).any() or (~np.isfinite(w64) & np.isfinite(g)).any():
            return False
    return made


__all__ = ["overflow_node"]
