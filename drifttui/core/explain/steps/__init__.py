"""The six debugging steps (docs/six-steps.md), one module each; ``run_step(number, ctx)`` runs one.

A step that cannot run on this model is reported ``inconclusive`` with the reason, never an abort.
``drifttui.core.explain.explain`` runs them for the front ends.
"""
from __future__ import annotations

from drifttui.core.explain.context import Context
from drifttui.core.explain.steps import artifact, custom, determinism, node, tolerance, zero
from drifttui.core.result import STEP_TITLES, Step
from drifttui.errors import Cancelled, DriftTuiError

TITLES = STEP_TITLES
_STEPS = {1: artifact, 2: zero, 3: node, 4: tolerance, 5: determinism, 6: custom}
STEP_NUMBERS = tuple(_STEPS)


def run_step(number: int, ctx: Context) -> Step:
    """Step ``number`` (1-6) on the context of a finished run."""
    if number not in _STEPS:
        raise ValueError(f"there is no step {number} (steps are 1-6)")
    try:
        return _STEPS[number].run(ctx)
    except (Cancelled, KeyboardInterrupt):
        raise
    except DriftTuiError as exc:
        return Step(number, TITLES[number], "inconclusive", f"the step could not run: {exc}", {}, "")
    except Exception as exc:  # noqa: BLE001 - a broken step is reported, not fatal
        return Step(number, TITLES[number], "inconclusive",
                    f"the step failed: {type(exc).__name__}: {str(exc)[:200]}", {}, "rerun with --debug")


__all__ = ["STEP_NUMBERS", "TITLES", "run_step"]
