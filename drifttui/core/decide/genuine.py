"""The drifting calls of a reduced-precision file that no precision can explain (decide's genuine drifts)."""
from __future__ import annotations

from typing import Any


def genuine_drifts(drifting: list[int], by_weight: dict[int, int], rules: Any) -> list[int]:
    """In a reduced-precision file, the drifting calls no precision can explain: a weight that is not
    the model's (compared by content), or an own error over the tolerance with no reduced node of its
    own (a wrong epsilon in a LayerNorm the converter left in float32).  They are the drift origin even
    when a layer over its precision budget comes first (that one is the precision origin: both stories,
    issue 33 4c); before, a saturating first int8 layer hid a wrong weight further down (point 7)."""
    if not rules.budgets:
        return []
    return [i for i in drifting if i in by_weight
            or not (rules.budgets.get(i) is not None and rules.budgets[i].run_ids)]


def unreduced_drift(call: int, own: Any, atol: float, rules: Any) -> bool:
    """A layer of a reduced-precision file with no reduced node of its own (its nodes compute in float32,
    fed with torch's values) whose own error fails the float32 tolerance: a drift even when its output
    stays under the output budget the reduced layers before it earn (a GELU's constant or a gate's slope
    changed in an int8 file; issue 33, point 8).  No precision can explain a float32 node's own error."""
    if not rules.budgets or own is None or not own.samples:
        return False
    b = rules.budgets.get(call)
    return not (b is not None and b.run_ids) and own.fails(atol, rules.own(call))
