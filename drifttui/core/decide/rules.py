"""decide's rules: the relative tolerance each comparison of a call is decided at (rtol, or in a
reduced-precision file its precision budget: derived from the conversion where capture measured it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drifttui.core.base.metrics import STEP, Stats
from drifttui.core.base.tolerance import SAFETY, bound, derived_budget


@dataclass(frozen=True)
class Rules:
    """The relative tolerance each comparison is decided at: ``rtol``, or in a reduced-precision
    file ``max(rtol, budget)`` (tolerance.BUDGET_RULE): per call its own error and its output, and
    the model outputs.  Budgets are static (prepare); shares are measured (capture)."""

    rtol: float
    budgets: dict = field(default_factory=dict)     # call -> prepare.call_budgets.CallBudget
    out_budget: float = 0.0
    shares: dict = field(default_factory=dict)      # call -> measured share of the output error
    rounding: dict = field(default_factory=dict)    # call -> its recomputation's deviation (capture/rounding.py)

    def own_budget(self, call: int) -> float:
        """The call's own budget: derived from its recomputation in the file's precision, capped by
        the worst-case bound (tolerance.derived_budget); 0 without a budget."""
        b = self.budgets.get(call)
        return derived_budget(b.own, self.rounding.get(call)) if b is not None else 0.0

    def own(self, call: int) -> float:
        return max(self.rtol, self.own_budget(call))

    def measured(self, call: int) -> bool:
        """The call's own budget is measured for it (capture/rounding.py, below the worst-case bound): it
        replaces the dtype floor and is judged alone."""
        b = self.budgets.get(call)
        return b is not None and b.own > 0.0 and call in self.rounding and self.own_budget(call) < b.own

    def own_fails(self, call: int, own: Any, atol: float) -> bool:
        """Its own error (an Aggregate or one value's Stats) over its own budget; the integers it makes (bins,
        indices) at rtol: a float16 budget covers roundings, not a whole step of an integer computed from them."""
        floor = not self.measured(call)
        if isinstance(own, Stats):
            return own.fails_at(atol, self.own(call), floor) or _step_fails(own.bounds(), atol, self.rtol)
        return own.fails(atol, self.own(call), floor) or any(_step_fails(b, atol, self.rtol) for b in own.bounds)

    def rounding_explains(self, call: int, own: Any, atol: float) -> bool:
        """Its own error is within SAFETY x the deviation of its recomputation in the file's precision
        (capture/rounding.py: torch's weights and inputs rounded as the file rounds them): the file's own
        rounding of this layer explains its error, even where that is over the worst-case bound (a
        LayerNorm normalising an int8-quantized input loses more than the bound assumes)."""
        m = self.rounding.get(call)
        if m is None or m != m or own is None or not getattr(own, "samples", None):
            return False
        return not own.fails(atol, max(self.rtol, SAFETY * m), False)

    def judged_alone(self, call: int) -> bool:
        """A call with reduced nodes of its own whose budget was measured for it: its own error over that
        budget fails it even when its output is within its output budget (either test, docs/deploy.md).
        A call held to the worst-case bound alone is not: clean layers pass that bound (a Conv folded into
        a BatchNorm's call, an int8 ReLU of a QOperator ResNet-18), so it is judged with its output."""
        b = self.budgets.get(call)
        return b is not None and bool(b.run_ids) and self.measured(call)

    def out(self, call: int) -> float:
        b = self.budgets.get(call)
        return max(self.rtol, b.out) if b is not None else self.rtol

    def weight(self, call: int, w: Any) -> float:
        """A weight compared by content: a strict one (an int8 weight against the model's tensor) at
        rtol plus its own rounding, a packed block at its call's own rule."""
        return self.rtol if getattr(w, "strict", False) else self.own(call)

    @property
    def outputs(self) -> float:
        return max(self.rtol, self.out_budget)


def _step_fails(pairs: Any, atol: float, rtol: float) -> bool:
    """An integer comparison among ``pairs`` (max |d|, max |t|, floor) over ``atol + rtol * scale``."""
    return any(f == STEP and not d <= bound(atol, rtol, t) for d, t, f in pairs)
