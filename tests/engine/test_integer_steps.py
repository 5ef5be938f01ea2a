"""An integer a float16 call makes (A-law bins, code indices) is judged at rtol, not at the call's float16 budget:
the budget covers roundings, and a bin one unit off is a whole step (forms48e's ``alaw_amp``: bins up to 255, one
off is 0.4 % of the scale, inside a 1.5 % float16 budget, and the call was left ``inherited``)."""
from __future__ import annotations

import torch

from drifttui.core.base.aggregate import Aggregate
from drifttui.core.base.metrics import compare
from drifttui.core.decide.rules import Rules
from drifttui.core.prepare.call_budgets import CallBudget

_RULES = Rules(1e-4, budgets={3: CallBudget("float16", 0.0146, 0.0156, 1, ("Mul",), (1,), (1,))})


def _bins(off: int) -> tuple:
    t = torch.arange(0, 256, dtype=torch.int64)
    o = t.clone()
    o[100] += off
    return t, o


def test_an_integer_one_step_off_fails_its_calls_own_rule():
    st = compare(*_bins(1))
    assert _RULES.own_fails(3, st, 1e-4)
    agg = Aggregate()
    agg.add(0, st)
    assert _RULES.own_fails(3, agg, 1e-4)


def test_equal_integers_and_floats_within_the_float16_budget_pass():
    assert not _RULES.own_fails(3, compare(*_bins(0)), 1e-4)
    t = torch.linspace(0, 255, 256)
    o = t.clone()
    o[100] += 1.0           # 0.4 % of the scale: a float16 value's rounding noise the budget covers
    assert not _RULES.own_fails(3, compare(t, o), 1e-4)
