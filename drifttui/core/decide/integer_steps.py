"""Integer values a call computes itself that differ from torch's by a whole step (decide's exact rule for them).

A call's own error is judged relative to its values' scale (``atol + rtol * max|t|``, or its precision budget):
right for floats, wrong for integers.  One unit on an int64 box coordinate of scale 580 is 1.7e-3 of it, inside a
float16 budget, yet an embedding looks up another row with it.  No rounding of a budget's kind moves an integer:
when the call's own nodes, fed torch's inputs, hand on integers that differ by a whole step, the call computed them
otherwise, and the failing layers after it (fed torch's integers, they agree) inherit from it.

The rule only names an origin where none was found: with no call drifting on its own budget and the outputs
failing, the first call whose own integers step is where the drift starts (instead of every failing layer being
``unattributed``).  Where a call already drifts on its budget, nothing changes: a budgeted float16 file may round an
integer conversion otherwise far downstream of the real origin, and the origin stays the first budget failure.
"""
from __future__ import annotations

from drifttui.core.base.metrics import Stats
from drifttui.core.result import display_name

STEP = 0.5      # a difference this large between integer values is a whole step (they differ by at least 1)


def integer_steps(values: dict[int, list[tuple[int, Stats]]], atol: float) -> dict[int, int]:
    """Per owner: the first node (execution order) of an own integer value that differs from torch's by a whole
    step past ``atol`` (a NaN or a shape mismatch counts too)."""
    out: dict[int, int] = {}
    for owner, rows in values.items():
        stepped = [first for first, st in rows if st.integer and steps(st, atol)]
        if stepped:
            out[owner] = min(stepped)
    return out


def steps(st: Stats, atol: float) -> bool:
    return st.shape_mismatch or st.nan_mismatch > 0 or not st.max_abs <= max(atol, STEP)


def step_note(module: str) -> str:
    return (f"{display_name(module)} is the origin by its integers: its own nodes, fed with the PyTorch-side inputs, "
            "compute integer values that differ from torch's by a whole step (a conversion of floats to integers, a "
            "floor or an index computed inside it), and the layers after it, fed torch's integers, agree; a whole "
            "step is no rounding any tolerance holds")
