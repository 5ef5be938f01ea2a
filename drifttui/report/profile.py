"""The error profile: each compared layer's output error against what it may differ by, in module
order, with the origin marked -- where the error starts and how it grows, in one line.

Leaf layers only (and the origin): a container's output is its last child's.  A layer's level
is its error over its allowance on a log scale: ``max |d| / (atol + rtol * scale)``
(the tolerance rule, scale = the layer's max |torch|), or in a reduced-precision file ``max rel /
its output budget``; 1 is the line.  Below the line the bars are ``▁▂▃▄`` (a decade each), above
it ``▅▆▇█``.  Which side of the line a layer is on is decide's (``Layer.fails``, the status): the
profile only draws it.  The origin is ``◆``; a layer with nothing compared is `` ``.  Readable
without colour: the heights and the one ◆ carry it all (the text report's legend says so).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from drifttui.core.result import DRIFT, INHERITED, Layer, Result

BARS = "▁▂▃▄▅▆▇█"
ORIGIN = "◆"
EMPTY = " "
MAX_WIDTH = 64          # characters of the text report's profile


@dataclass(frozen=True)
class Point:
    layer: Layer
    ratio: Optional[float]     # error / allowance (None: not compared)
    over: bool                 # decided: over the tolerance or the budget
    origin: bool

    @property
    def level(self) -> int:
        """0..7: four decades below the line (ratio < 1e-3 is 0), four above (>= 1e3 is 7)."""
        if self.ratio is None:
            return -1
        r = self.ratio
        if self.over:
            return 7 if not math.isfinite(r) else 4 + min(3, int(math.floor(math.log10(max(r, 1.0)))))
        if r >= 1:
            return 3            # within by decide's rule (a dtype floor) though over the plain rule
        return 0 if r <= 0 else 3 - min(3, max(0, int(math.ceil(-math.log10(r))) - 1))


def allowance(result: Result, L: Layer) -> Optional[float]:
    """What the layer's output may differ by, in its units (max |d|): the tolerance rule at the
    layer's scale, or in a reduced-precision file its output budget at that scale; None without
    metrics or a scale."""
    m = L.metrics
    if m is None or not m.max_rel.worst > 0 or not math.isfinite(m.max_rel.worst):
        return None
    scale = m.max_abs.worst / m.max_rel.worst
    if L.budget is not None and L.budget.out_budget > 0:
        return L.budget.out_budget * scale
    return result.tolerance.atol + result.tolerance.rtol * scale


def ratio(result: Result, L: Layer) -> Optional[float]:
    """The layer's output error over its allowance (None when it has no metrics)."""
    m = L.metrics
    if m is None:
        return None
    if L.budget is not None and L.budget.out_budget > 0:
        return m.max_rel.worst / L.budget.out_budget
    d, rel = m.max_abs.worst, m.max_rel.worst
    if d != d or rel != rel:
        return math.inf
    scale = d / rel if rel > 0 else 0.0
    bound = result.tolerance.atol + result.tolerance.rtol * scale
    return d / bound if bound > 0 else (0.0 if d == 0 else math.inf)


def points(result: Result) -> list[Point]:
    """The compared leaf layers in execution order, and the origin wherever it is (a container's
    output is its last child's: drawn, the root and every block would repeat the worst error
    ahead of where it starts); a layer with no metrics is left out."""
    origin = result.drift_origin.layer if result.drift_origin is not None else None
    parents = {L.parent for L in result.layers if L.parent is not None}
    out = []
    for L in result.layers:
        r = ratio(result, L)
        if r is None or (L.index in parents and L.index != origin):
            continue
        over = L.status in (DRIFT, INHERITED) or any(L.fails.get(k, False) for k in ("max_abs", "max_rel"))
        out.append(Point(L, r, over, L.index == origin))
    return out


def strip(pts: list[Point], width: int = MAX_WIDTH) -> str:
    """One character per layer, or per run of layers (its worst) when there are more than ``width``;
    the origin's character is ◆ wherever it falls."""
    if not pts:
        return ""
    n = len(pts)
    buckets = [pts[i * n // width:(i + 1) * n // width] for i in range(width)] if n > width else [[p] for p in pts]
    chars = []
    for b in buckets:
        if not b:
            continue
        if any(p.origin for p in b):
            chars.append(ORIGIN)
        else:
            level = max(p.level for p in b)
            chars.append(BARS[level] if level >= 0 else EMPTY)
    return "".join(chars)


def profile_line(result: Result, width: int = MAX_WIDTH) -> str:
    """``profile ▁▁▂▁◆▇▇█  (error / tolerance per layer, in order: ▁▂▃▄ within, ▅▆▇█ over; ◆ origin)``."""
    pts = points(result)
    if not pts:
        return ""
    budget = result.precision is not None and bool(result.precision.verdict)
    what = "budget" if budget else "tolerance"
    per = "" if len(pts) <= width else f", {len(pts)} layers, worst of each run"
    return f"profile {strip(pts, width)}  (error / {what} per layer in order{per}: ▁▂▃▄ within, ▅▆▇█ over; ◆ origin)"
