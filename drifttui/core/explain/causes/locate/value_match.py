"""Which ONNX value holds a torch value: the matching rule of ``torch_align`` (a torch call is *found* in the
file when an ONNX value of its shape holds its value).

A value holds torch's when its floored relative error (``fx_localise.floored_rel``: |d| / (|t| + 1% of max |t|),
inf where a NaN or inf differs) is within the run's rtol, or two units in the last place of a float16 / bfloat16
value (each side rounds once, maybe in another order); an integer or boolean value is equal.  Of the values that
hold it, one of its dtype first, then the closest.  Candidates are looked up by their first element (sorted,
bisected within the widest error a holding value can have there, the nearest 32), then checked on 16 sampled
elements before the whole value: a 2000-node origin's values of one shape are not each compared with each call.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from drifttui.core.base.dtypes import FLOAT32_EPS, FLOATS, LOW_PRECISION
from drifttui.core.base.metrics import largest
from drifttui.core.explain.causes.locate.fx_localise import floored_rel

_PROBES = 16                    # sampled elements compared before a whole value
_NEAREST = 32                   # candidate values per call, by their first element


def _rel(want: np.ndarray, got: np.ndarray) -> float:
    """max |want - got| / (|want| + 1% of max |want|) (fx_localise's floored relative error: no near-zero
    element blows it up); inf where a NaN or inf differs."""
    return floored_rel(want, got)          # in their own dtypes: an element at its dtype's extreme is a fill


def bound(dtype: str, rtol: float) -> float:
    """The relative error a right value keeps: the run's rtol, two units in the last place of a float16 or
    bfloat16 value (each side rounds once, maybe in another order), nothing for an integer or a boolean."""
    if dtype not in FLOATS:
        return 0.0
    return max(rtol, 2.0 * LOW_PRECISION.get(dtype, FLOAT32_EPS))


def _top(want: np.ndarray) -> float:
    """max |want| over its finite elements short of their dtype's largest magnitude (the floor of the floored
    relative error is 1% of it; a ``finfo.min`` mask fill would floor every error at 3.4e36)."""
    w = np.abs(want.astype(np.float64, copy=False))
    fin = w[np.isfinite(w) & (w < largest(want))]
    return float(fin.max()) if fin.size else 0.0


def _holds(want: np.ndarray, dtype: str, got: np.ndarray, rtol: float, top: float) -> Optional[float]:
    """The relative error of ONNX value ``got`` against torch's ``want``, when it holds it; else None."""
    if np.shape(want) != np.shape(got) or want.dtype.kind not in "fiub" or got.dtype.kind not in "fiub":
        return None
    most = bound(dtype, rtol)
    w, g = want.reshape(-1), got.reshape(-1)
    if w.dtype.kind in "iub" and g.dtype.kind in "iub":     # exactly: int64 past 2**53 is no float64
        return 0.0 if np.array_equal(w, g) else None
    if w.size > _PROBES:            # the sampled elements first: what the whole value must meet there too
        at = np.linspace(0, w.size - 1, _PROBES).astype(np.int64)
        wa, ga = w[at].astype(np.float64), g[at].astype(np.float64)
        with np.errstate(invalid="ignore"):
            off = ~((wa == ga) | (np.isnan(wa) & np.isnan(ga))) & ~(np.abs(wa - ga) <= most * (np.abs(wa) + 0.01 * top) * 1.001)
        if off.any():
            return None
    rel = _rel(w, g)
    return rel if rel <= most else None


def held_dtype(ops: list[tuple], k: int, rtol: float) -> str:
    """The precision call ``k``'s value is held to: its own, or its inputs' when lower (``c.float()`` of a float16
    ``c`` holds its rounding)."""
    return max([ops[k][4]] + [ops[i][4] for i in ops[k][3]], key=lambda d: bound(d, rtol))


def noise(dtype: str) -> float:
    """The relative error of a right value computed in another order: 16 float32 ulps; a float16 or bfloat16
    value's bound (two units in its last place: ONNX Runtime's dropped roundings stay below it)."""
    if dtype in LOW_PRECISION:
        return 2.0 * LOW_PRECISION[dtype]
    return 16.0 * FLOAT32_EPS if dtype in FLOATS else 0.0


def found_values(ops: list[tuple], vals: dict[str, np.ndarray],
                 rtol: float) -> tuple[dict[int, str], dict[int, float], dict[int, list[str]]]:
    """torch op index -> the ONNX value that holds its value (of its dtype first, then the closest), and its
    relative error, and the other values that hold it as closely (``causal`` picks among them).  The candidates of a shape are looked up by their first element (sorted, bisected within
    the widest error a holding value can have there): a deep block's thousands of values of one shape are not
    each compared with each op."""
    index = _first_elements(vals)
    order = {v: i for i, v in enumerate(vals)}      # the values in the order the graph computes them
    found: dict[int, str] = {}
    rels: dict[int, float] = {}
    others: dict[int, list[str]] = {}
    for k, (_, _, val, ins, dtype) in enumerate(ops):
        if val is None or val.size == 0 or val.dtype.kind not in "fiub" or tuple(val.shape) not in index:
            continue
        hits = []
        top = _top(val)
        held = held_dtype(ops, k, rtol)
        for v in _near(index[tuple(val.shape)], val, bound(held, rtol), top):
            got = np.asarray(vals[v])
            rel = _holds(val, held, got, rtol, top)
            if rel is not None:
                hits.append((str(got.dtype) != dtype, rel, order[v], v))
        if hits:        # of values that hold it as closely, the first computed (not the first name: Greater_1 sorts
            #             before Greater, and an atan2's Greater of the cast mask would be the mask's gt)
            _, rels[k], _, found[k] = min(hits)
            others[k] = [v for _, r, _, v in sorted(hits) if r == rels[k] and v != found[k]]
    return found, rels, others


def _first_elements(vals: dict[str, np.ndarray]) -> dict[tuple, tuple[np.ndarray, list[str], list[str]]]:
    """shape -> (first elements sorted, their values' names in that order, the names whose first is NaN)."""
    groups: dict[tuple, list[tuple[float, str]]] = {}
    for v, a in vals.items():
        a = np.asarray(a)
        if a.size and a.dtype.kind in "fiub":
            groups.setdefault(tuple(a.shape), []).append((float(a.reshape(-1)[0]), v))
    out = {}
    for shape, items in groups.items():
        nan = [v for x, v in items if x != x]
        ordered = sorted((x, v) for x, v in items if x == x)
        out[shape] = (np.array([x for x, _ in ordered], dtype=np.float64), [v for _, v in ordered], nan)
    return out


def _near(entry: tuple[np.ndarray, list[str], list[str]], val: np.ndarray, most: float, top: float) -> list[str]:
    """The values of ``entry``'s shape whose first element is where a value holding ``val`` has its own: within
    the floored relative error ``bound`` of it (the nearest ``_NEAREST`` of them)."""
    firsts, names, nan = entry
    w0 = float(val.reshape(-1)[0])
    if w0 != w0:
        return nan
    if not np.isfinite(w0):
        return [n for x, n in zip(firsts, names) if x == w0]
    width = most * (abs(w0) + 0.01 * top) * 1.001 + 1e-30
    lo = int(np.searchsorted(firsts, w0 - width, side="left"))
    hi = int(np.searchsorted(firsts, w0 + width, side="right"))
    if hi - lo > _NEAREST:
        return [names[i] for i in sorted(range(lo, hi), key=lambda i: abs(firsts[i] - w0))[:_NEAREST]]
    return names[lo:hi]
