"""A module with no ONNX value of its own, compared with the calls that absorbed it as one unit
(prepare/unit_members.py): which of the unit's calls is the drift once a member's own computation differs."""
from __future__ import annotations

from typing import Any

from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import DRIFT, INHERITED, display_name
from drifttui.core.runtime.torch_hooks import Call


def split_units(calls: list[Call], units: dict[int, set[int]], statuses: list[str], by_weight: dict[int, int]) -> None:
    """A unit (prepare/unit_members.py) whose member's own computation differs: the calls that absorbed it were fed
    its values (inherited), and so is a member whose descendant member differs too (the deepest is the drift)."""
    def above(i: int, j: int) -> bool:
        p = calls[j].parent
        while p is not None and p != i:
            p = calls[p].parent
        return p == i
    for i in [i for i in units if any(above(i, j) for j in units if j != i)]:
        statuses[i] = INHERITED
        by_weight.pop(i, None)
        units.pop(i)
    for owners in units.values():
        for o in owners:
            if statuses[o] == DRIFT and o not in by_weight:
                statuses[o] = INHERITED


def unit_note(calls: list[Call], plan: Plan, origin: int, atol: float, rules: Any) -> str:
    """The run's note when the origin is a unit's member: the two were compared as one."""
    cm = plan.calls[origin]
    said = [w.note(atol, rules.weight(origin, w)) for w in cm.weights if hasattr(w, "owners")]
    return f"{display_name(calls[origin].module)}: {said[0]}" if said else ""
