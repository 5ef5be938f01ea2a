"""A patch verifies only when it holds: the origin under the tolerance on its worst sample AND on
``FRESH`` samples drawn fresh (indices past the compared ones, so never tuned on).

A patch that removes the drift on the worst sample by luck (a replaced constant that happens to
fit one input, a rounding that cancels on one draw) fails here and stays unverified.  Inputs from
a fixed file have one sample: the check is the worst sample alone, and the evidence says so.

A patch ``repair`` writes also holds only in the whole file: a graph edit applied to (a re-export grafted into) the
file as ``repair`` writes it (pruned of unread nodes), run at the levels a check runs it at (the per-layer pass's
and the deployed one's), fed the same torch-side values where the case is cut (``locate/in_file.py``), on the worst
and the fresh samples.  One that removes the drift in the cut-out origin alone (ONNX Runtime's graph transformers
treat the cut-out otherwise) is marked failing, with the figure (``Trial.in_file``; the finding says so:
``conclude.cut_out_only``), and the search goes on to the next patch.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.explain.causes.locate.case import Case, fresh_indices, origin_case
from drifttui.core.explain.causes.locate.case_data import judged
from drifttui.core.explain.causes.locate.evaluate import Eval, judged_error
from drifttui.core.explain.causes.locate.inner_values import widen
from drifttui.core.explain.causes.locate.in_file import file_errors
from drifttui.core.onnx.edit.graft.splice import GraftError, graft
from drifttui.core.onnx.edit.keep.float32 import without_views
from drifttui.core.onnx.edit.patches import PatchError, apply
from drifttui.core.explain.causes.propose.reexport.variants import error_on

__all__ = ["fresh_indices", "hold"]


def _on(ctx: Any, case: Case, trial: Any) -> Optional[Eval]:
    """The trial's patch on another sample's case: None when that case cannot be built."""
    if trial.patch.spec.get("op") == "reexport":
        return error_on(ctx, case, trial.patch)
    try:
        return judged_error(case, trial.patch, apply(case.model, trial.patch))
    except PatchError as exc:
        return Eval(float("inf"), True, False, str(exc))


def hold(ctx: Any, trials: list[Any]) -> list[Any]:
    """Mark the passing trials that fail on a fresh sample as failing (``Trial.fresh`` records the
    fresh samples' local errors); ``trials``, marked."""
    passing = [t for t in trials if t.after.ok and not t.after.fails]
    if not passing:
        return trials
    cases = []
    for k in fresh_indices(ctx):
        case = origin_case(ctx, sample=k)
        if case is None:
            continue
        case = widen(ctx, case)       # the inner value the worst sample's case compares too
        cases.append(case)
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
    worst = origin_case(ctx)
    for t in passing:
        if not t.after.fails and t.patch.applicable and worst is not None:
            _in_file(ctx, [widen(ctx, worst), *cases], t)
    return trials


def _patched_file(ctx: Any, patch: Any) -> Optional[Any]:
    """The file as ``repair`` writes it with ``patch`` alone: a graph edit applied, or a re-export grafted (cut
    where the file holds the origin's input first, as repair grafts it), drifttui's views undone; None when it
    does not apply."""
    try:
        if patch.graph_level:
            return without_views(apply(ctx.index.model, patch, ctx.index.data_dir))
        g = patch.graft
        if g.narrow is not None:
            try:
                return without_views(graft(ctx.index.model, g.narrow))
            except GraftError:
                pass
        return without_views(graft(ctx.index.model, g))
    except (PatchError, GraftError):
        return None


def _in_file(ctx: Any, cases: list[Case], trial: Any) -> None:
    """``trial`` (a patch ``repair`` writes that holds in the cut-out origin) measured in the whole patched file at
    the levels a check runs it at, on ``cases`` (the worst sample first); marked failing, with the figure, when it
    does not hold there.  No evidence (a file that cannot be cut or run so) leaves it as it is."""
    patched = _patched_file(ctx, trial.patch)
    evals = file_errors(ctx, patched, [judged(c, trial.patch) for c in cases]) if patched is not None else None
    if evals is None:
        return
    for case, (level, ev) in zip(cases * len(evals), evals):
        trial.in_file.append({"sample": case.sample, "level": level, "local_after": ev.max_abs,
                              "fails": ev.fails or not ev.ok})
        if ev.fails or not ev.ok:
            trial.after = Eval(trial.after.max_abs, True, True,
                               f"removes the drift in the cut-out origin but not in the whole file at ONNX Runtime "
                               f"level {level!r} (the origin's local error there {ev.text()}, sample {case.sample}): "
                               f"its graph transformers compute the patched file otherwise")
            return
