"""A re-exported call's input that the file holds only before a fusion: the value to graft from, found by content.

A verified re-export is grafted from the file's values of the call's inputs (``reexport._graft``).  A graph
optimiser can leave such an input with no value of its own: ONNX Runtime's MatMulScaleFusion (a file written at
the extended level) folds the parent's ``stem(x) * 3.0`` into the next MatMul's ``alpha``, so the file holds
``stem(x)`` and a ``FusedMatMul`` with alpha 3.0 times the module's own scale; its MatMulAddFusion reshapes a
Linear's 3-D input to 2-D before the ``Gemm``, so the call's nodes read the flattened value.  Then the absorbed
module (``prepare/unit_members.py``) was verified but could not be repaired: there was no value to graft from.

The call's nodes are un-fused back to their parts at their inputs: the values they read from outside, and up
the chain of each one's producers (at most ``DEPTH`` nodes up, outside the call), are read in ONNX Runtime on the
case's sample, and the first that holds torch's input, exactly (within the tolerance) or times one scalar, is the
input: the scalar is what the fusion moved into the call's node, and the graft recomputes it (``Graft.scaled``,
a ``Mul`` before the grafted nodes) while the fused node goes with the call's nodes it replaces.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import onnx

from drifttui.core.base.tolerance import bound
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.runtime import sessions

DEPTH = 3          # producers walked up from a value the call's nodes read
MAX_VALUES = 16    # values read in ONNX Runtime per call


def candidates(ctx: Any, case: Case) -> list[str]:
    """The non-constant values the case's nodes read from outside them and, breadth first, the data inputs of
    their producers outside the case (nearest first)."""
    index = ctx.index
    mine = set(case.nodes)
    produced = {v for n in index.nodes if n.name in mine for v in n.outputs if v}
    level = [v for n in index.nodes if n.name in mine for v in n.inputs if v and v not in produced]
    out: list[str] = []
    for _ in range(DEPTH + 1):
        nxt: list[str] = []
        for v in level:
            if v in out or index.is_static(v) or len(out) >= MAX_VALUES:
                continue
            out.append(v)
            p = index.producer.get(v)
            if p is not None and index.nodes[p].name not in mine:
                nxt += [u for u in index.nodes[p].inputs if u]
        level = nxt
    return out


def scale_of(held: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> Optional[float]:
    """The scalar ``s`` with ``s * held`` equal to ``want`` within the tolerance (1.0: the value itself), or None."""
    if held.shape != want.shape or held.dtype.kind != "f" or want.dtype.kind != "f" or not want.size:
        return None
    h, w = held.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    if not (np.isfinite(h).all() and np.isfinite(w).all()):
        return None
    hh = float(h @ h)
    if hh == 0.0:
        return None
    s = float(h @ w) / hh
    short = float(f"{s:.6g}")           # the constant the fusion folded is a short number (3.0, -0.5)
    s = short if abs(short - s) <= 1e-6 * abs(s) else s
    if s == 0.0:
        return None
    scale = float(np.abs(w).max())
    limit = min(bound(atol, rtol, scale), 1e-3 * scale)      # relative too: never a tensor of near-zeros
    for k in (1.0, s):
        if float(np.abs(k * h - w).max()) <= limit:
            return k
    return None


def held_input(ctx: Any, case: Case, arr: np.ndarray, exclude: set[str]) -> Optional[tuple[str, float]]:
    """(the file value, the scalar) that holds the call input ``arr`` (torch's, on the case's sample), or None."""
    names = [v for v in candidates(ctx, case) if v not in exclude and _fits(ctx, v, arr)]
    if not names:
        return None
    try:
        sess = ctx.ort_session("disable", extra=tuple(names))
        got = sessions.run(sess, ctx.feeds(ctx.sample(case.sample)), names)
    except Exception:  # noqa: BLE001 - no value read: the input stays without one (the graft is not applicable)
        return None
    for v in names:
        s = scale_of(np.asarray(got[v]), arr, case.atol, case.rtol)
        if s is not None:
            return v, s
    return None


def _fits(ctx: Any, v: str, arr: np.ndarray) -> bool:
    """Could hold ``arr``: a float value whose known dims agree with its shape."""
    elem = ctx.index.elem_types.get(v)
    try:
        if elem and onnx.helper.tensor_dtype_to_np_dtype(elem).kind != "f":
            return False
    except Exception:  # noqa: BLE001 - an element type numpy has no dtype for (bfloat16): never this float32 input
        return False
    dims = ctx.index.shapes.get(v)
    if not dims:
        return True
    return len(dims) == arr.ndim and all(not isinstance(d, int) or d <= 0 or d == n for d, n in zip(dims, arr.shape))
