"""A patch verifies only when it holds: the origin under the tolerance on its worst sample AND on
``FRESH`` samples drawn fresh (indices past the compared ones, so never tuned on).

A patch that removes the drift on the worst sample by luck (a replaced constant that happens to
fit one input, a rounding that cancels on one draw) fails here and stays unverified.  Inputs from
a fixed file have one sample: the check is the worst sample alone, and the evidence says so.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.explain.causes.locate.case import Case, fresh_indices, origin_case
from drifttui.core.explain.causes.locate.evaluate import Eval, ort_error
from drifttui.core.explain.causes.locate.fx_localise import widen
from drifttui.core.onnx.edit.patches import PatchError, apply
from drifttui.core.explain.causes.propose.reexport import error_on

__all__ = ["fresh_indices", "hold"]


def _on(ctx: Any, case: Case, trial: Any) -> Optional[Eval]:
    """The trial's patch on another sample's case: None when that case cannot be built."""
    if trial.patch.spec.get("op") == "reexport":
        return error_on(ctx, case, trial.patch)
    try:
        return ort_error(case, apply(case.model, trial.patch))
    except PatchError as exc:
        return Eval(float("inf"), True, False, str(exc))


def hold(ctx: Any, trials: list[Any]) -> list[Any]:
    """Mark the passing trials that fail on a fresh sample as failing (``Trial.fresh`` records the
    fresh samples' local errors); ``trials``, marked."""
    passing = [t for t in trials if t.after.ok and not t.after.fails]
    if not passing:
        return trials
    for k in fresh_indices(ctx):
        case = origin_case(ctx, sample=k)
        if case is None:
            continue
        case = widen(ctx, case)       # the inner value the worst sample's case compares too
        for t in passing:
            if t.after.fails:
                continue
            ev = _on(ctx, case, t)
            if ev is None:
                continue
            t.fresh.append({"sample": k, "local_after": ev.max_abs, "fails": ev.fails or not ev.ok})
            if ev.fails or not ev.ok:
                t.after = Eval(t.after.max_abs, True, True,
                               f"removes the drift on the worst sample but not on fresh sample {k} "
                               f"(local error {ev.text()})")
    return trials
