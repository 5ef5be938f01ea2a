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
            or not (rules.budgets.get(i) is not None and rules.budgets[i].node_ids)]
