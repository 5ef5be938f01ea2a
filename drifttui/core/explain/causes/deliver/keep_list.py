"""``drifttui repair`` on an over-budget reduced-precision file: the smallest verified keep-in-float32 list.

Candidates are the layers decide found over their precision budget, ordered by their measured share
of the output error (capture/shares.py).  Greedy: keep the next candidate's reduced-precision nodes in
float32 (prepare/keep_float32.py: a patch on a copy, torch's weights where the file holds a rounded
copy of them), check the whole copy again, until it is within budget; then prune: drop each kept
layer whose removal still leaves the copy within budget.  Verified = the final copy, checked end to
end like the user's file, is within budget.  A layer over its budget whose share is about 0 is not a
precision loss (keeping it in float32 changes nothing: a wrong weight or attribute): it is named as
a genuine drift, never kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from drifttui.core.onnx.edit.keep_float32 import converter_forms, keep_float32, original_names, without_views
from drifttui.core.onnx.edit.keep_qoperator import unit
from drifttui.core.explain.causes.propose.precision_loss import GENUINE_SHARE



@dataclass
class KeepList:
    layers: list[str] = field(default_factory=list)          # the kept layers (module names)
    indices: list[int] = field(default_factory=list)         # ... and their layer numbers
    nodes: list[str] = field(default_factory=list)           # their nodes in the user's float model's names
    forms: dict[str, str] = field(default_factory=dict)      # converter -> argument
    model: Optional[Any] = None                              # the verified patched copy
    after: Optional[Any] = None                              # the check of that copy (a Result)
    verified: bool = False
    checks: int = 0                                          # whole-model checks run
    genuine: list[str] = field(default_factory=list)         # over budget but not a precision loss


def search(prepared: Any, result: Any, recheck: Callable[[Any], Any], weights: dict[str, Any]) -> KeepList:
    """The keep-list for ``result`` (over budget) of ``prepared``; ``recheck(model) -> Result``."""
    budgets = (prepared.budgets or ({}, 0.0))[0]
    o = result.drift_origin
    if o is not None and result.precision is not None and result.precision.cause == "genuine drift":
        # decide's word: the origin is not a precision loss; name it, not a consequence further down
        return KeepList(genuine=[o.module or "(root)"], indices=[o.layer])
    over = [L for L in result.layers if L.budget is not None and L.budget.over and budgets.get(L.index)]
    genuine = [L for L in over if L.budget.share is not None and L.budget.share < GENUINE_SHARE]
    cands = sorted((L for L in over if L not in genuine), key=lambda L: -(L.budget.share or 0.0))
    if not cands:       # the outputs alone are over: every reduced layer, largest share first
        cands = sorted((L for L in result.layers if L.budget is not None and budgets.get(L.index) is not None
                        and budgets[L.index].node_ids), key=lambda L: -(L.budget.share or 0.0))
    out = KeepList(genuine=[L.module or "(root)" for L in genuine], indices=[L.index for L in genuine])
    if genuine:
        return out            # a genuine drift: the verified patches are the repair, not a keep-list

    def within(kept: list[Any]) -> tuple[bool, Any, Any]:
        nodes = {k for L in kept for k in budgets[L.index].node_ids}
        model = without_views(keep_float32(prepared.proto, prepared.index, nodes, weights))   # the file written
        after = recheck(model)
        out.checks += 1
        return after.verdict == "ok", model, after

    by_index = {L.index: L for L in result.layers}
    kept: list[Any] = []
    ok, model, after = False, None, None
    for L in cands:
        # a QOperator layer goes with the layers whose quantized outputs it reads (keep_qoperator.unit)
        kept.extend(by_index[c] for c in unit(prepared.index, budgets, L.index) if by_index[c] not in kept)
        ok, model, after = within(kept)
        if ok:
            kept, model, after = _pruned(kept, L, within, model, after)
            break
    nodes = {k for L in kept for k in budgets[L.index].node_ids}
    fmt = result.precision.format if result.precision is not None else ""
    out.layers = [L.module or "(root)" for L in kept]
    out.indices = [L.index for L in kept]
    out.nodes = original_names(prepared.index, nodes)
    out.forms = converter_forms(prepared.index, nodes, fmt)
    out.model, out.after, out.verified = model, after, ok
    return out


def _pruned(kept: list[Any], needed: Any, within: Callable, model: Any, after: Any) -> tuple[list[Any], Any, Any]:
    """Drop each kept layer (but ``needed``, the candidate the copy first passed with) whose removal
    still leaves the copy within budget, latest first."""
    for L in [x for x in reversed(kept) if x is not needed]:
        trial = [x for x in kept if x is not L]
        ok, m, a = within(trial)
        if ok:
            kept, model, after = trial, m, a
    return kept, model, after
