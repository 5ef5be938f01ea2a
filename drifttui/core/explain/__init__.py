"""Stage 4, after decide: why the origin drifts.  ``explain(ctx, steps)`` is the one entry every front
end uses (the CLI's check gate, diagnose, repro and repair, the Python API, the TUI's step keys):

* ``findings``: every drift check (``checks/``, one module per drift class) proposes findings and
  patches; ``causes/`` cuts the origin's own nodes out with their torch-side inputs and verifies a
  finding when its patch removes the drift there (counterfactual); ranked, verified first;
* ``steps``: the six debugging steps (``steps/``), which reuse the findings (step 3) and rerun
  captures through the engine's cache (``context.Context.rerun``).

The context (``context.py``) is created and cached by the engine (``pipeline.Pipeline.context``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from drifttui.core.explain.causes import Explanation
from drifttui.core.explain.context import Context
from drifttui.core.explain.findings import findings as verified_findings
from drifttui.core.explain.steps import STEP_NUMBERS, run_step
from drifttui.core.explain.steps.precision import genuine_line
from drifttui.core.result import Result


@dataclass(frozen=True)
class Explained:
    """The result with its findings (and the steps that ran), and the verification behind them
    (the origin's case, the localisation, the patches tried) that repro and repair need."""

    result: Result
    explanation: Optional[Explanation]            # None when only steps were asked (findings=False)


def explain(ctx: Context, steps: Iterable[int] = (), findings: bool = True) -> Explained:
    """The findings of ``ctx.result``, and the debugging ``steps`` asked for (none, some, or all six).
    ``findings=False`` runs the steps alone (a step key in the TUI): the explanation is then None."""
    numbers = list(steps)
    for n in numbers:
        if n not in STEP_NUMBERS:
            raise ValueError(f"there is no step {n} (steps are 1-6)")
    by_number = {s.step: s for s in ctx.result.steps}
    for n in numbers:
        by_number[n] = run_step(n, ctx)
    ordered = [by_number[k] for k in sorted(by_number)]
    if not findings:
        return Explained(ctx.result.with_(steps=ordered), None)
    exp = verified_findings(ctx)
    return Explained(ctx.result.with_(steps=ordered, findings=list(exp.findings)), exp)


__all__ = ["Explained", "explain", "run_step", "STEP_NUMBERS", "genuine_line"]
