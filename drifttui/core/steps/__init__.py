"""The six debugging steps (docs/six-steps.md).

``diagnose(session, result, only=None)`` runs the steps (all, or one) and the drift checks
after a finished session and returns the result with ``steps`` and ``findings`` filled in.
``run_step(number, result)`` runs one step from a result alone (the TUI's keys 1-6); it
rebuilds and caches a session from ``result.config`` on first use.
"""
from __future__ import annotations

import importlib
from typing import Any, Optional

from drifttui.core.progress import CancelToken, ProgressFn, no_progress
from drifttui.core.result import STEP_TITLES, Result, Step

TITLES = STEP_TITLES
_MODULES = {1: "artifact", 2: "zero", 3: "node", 4: "tolerance", 5: "determinism", 6: "custom"}


def _step(number: int, ctx: Any) -> Step:
    from drifttui.errors import Cancelled, DriftTuiError

    mod = importlib.import_module(f"drifttui.core.steps.{_MODULES[number]}")
    try:
        return mod.run(ctx)
    except (Cancelled, KeyboardInterrupt):
        raise
    except DriftTuiError as exc:
        return Step(number, TITLES[number], "inconclusive", f"the step could not run: {exc}", {}, "")
    except Exception as exc:  # noqa: BLE001 - a broken step is reported, not fatal
        return Step(number, TITLES[number], "inconclusive",
                    f"the step failed: {type(exc).__name__}: {str(exc)[:200]}", {}, "rerun with --debug")


def run_step(number: int, result: Result, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None, session: Any = None) -> Step:
    """Run step ``number`` (1-6) for ``result``; reruns reuse a cached session and export."""
    from drifttui.core.diagnosis.context import context_for

    if number not in TITLES:
        raise ValueError(f"there is no step {number} (steps are 1-6)")
    ctx = context_for(result, session, progress, cancel)
    return _step(number, ctx)


def diagnose(session: Any, result: Result, only: Optional[int] = None, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None) -> Result:
    """The result with ``steps`` (all six, or ``only``) and ``findings`` (all checks)."""
    from drifttui.core.diagnosis.context import context_for

    ctx = context_for(result, session, progress, cancel)
    numbers = [only] if only else list(TITLES)
    steps = {s.step: s for s in result.steps}
    for n in numbers:
        steps[n] = _step(n, ctx)
    findings = findings_for(ctx)
    return result.with_(steps=[steps[k] for k in sorted(steps)], findings=list(findings))


def findings_for(ctx: Any) -> list:
    """Every check's findings, verified at the origin and ranked (drifttui/core/causes)."""
    from drifttui.core.causes import explain
    from drifttui.core.checks import run_checks

    return explain(ctx, run_checks(ctx)).findings


__all__ = ["TITLES", "diagnose", "findings_for", "run_step"]
