"""``drifttui repair`` on an over-budget reduced-precision file: the smallest verified keep-in-float32 list.

The verdict is over while any layer's own error is over its budget, so every layer over its budget is
kept, together (prepare/keep_float32.py: a patch on a copy, torch's weights where the file holds a
rounded copy of them), and the whole copy checked again; while its outputs are over, the other reduced
layers are added by measured share of the output error (capture/shares.py); then each layer added for
the outputs is pruned when the copy stays within budget without it.  Verified = the final copy,
checked end to end like the user's file, is within budget.  A genuine drift is never kept: the origin
decide called one, a weight that is not the model's, or over-budget layers whose share is about 0 and
whose keeping in float32 removes none of the output error (a wrong attribute).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from drifttui.core.onnx.edit.keep.converter_forms import converter_forms, original_names
from drifttui.core.onnx.edit.keep.float32 import keep_float32, unkept_ops, without_views
from drifttui.core.onnx.edit.keep.qoperator import unit
from drifttui.core.onnx.graph import full_model
from drifttui.core.explain.causes.propose.numerics.precision_loss import GENUINE_SHARE
from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS, WEIGHT_NOT_THE_MODELS
from drifttui.errors import DriftTuiError, first_line



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
    unkept: list[str] = field(default_factory=list)          # ops the copy left quantized (no float form here)
    refused: list[str] = field(default_factory=list)         # copies ONNX Runtime refused: their layers, its line

    def refused_why(self) -> str:
        """The copies ONNX Runtime refused, said: how many, the layers of the first and ONNX Runtime's line ("" when
        none was)."""
        if not self.refused:
            return ""
        more = f" (and {len(self.refused) - 1} more)" if len(self.refused) > 1 else ""
        return (f"; ONNX Runtime refused {len(self.refused)} cop{'y' if len(self.refused) == 1 else 'ies'} with "
                f"layers kept in float32, each skipped for the next candidate: {self.refused[0]}{more}")


def search(prepared: Any, result: Any, recheck: Callable[[Any], Any], weights: dict[str, Any]) -> KeepList:
    """The keep-list for ``result`` (over budget) of ``prepared``; ``recheck(model) -> Result``.

    The verdict is over while any layer's own error is over its budget, so every verified list keeps
    every layer over its budget: they are kept together first (one check), then the other reduced
    layers by share while the outputs are over, then each layer added for the outputs is pruned.
    A share of about 0 alone does not make a layer a genuine drift: on a CPU whose u8s8 kernels
    saturate, every quantized layer of a BERT is over its budget and keeping any one of them removes
    little of the output error (before, such a file got no keep-list: each layer was "a genuine
    drift").  A layer is a genuine drift when decide said so (the origin, or a weight that is not the
    model's), or when keeping every over-budget layer in float32 removes none of the output error and
    no recomputation in the file's precision explains their error (``budget.rounding_explains``)."""
    budgets = (prepared.budgets or ({}, 0.0))[0]
    decided = _genuine_by_decide(result)
    if decided is not None:
        return decided
    over, rest = _over_and_rest(result, budgets)
    out = KeepList()
    unkept: set[str] = set()
    whole: list[Any] = []       # the file with its external data read in, once (a copy is checked from a temp dir)

    def within(kept: list[Any]) -> tuple[bool, Any, Any]:
        nodes = {k for L in kept for k in budgets[L.index].node_ids}
        unkept.update(unkept_ops(prepared.index, nodes))
        whole[:] = whole or [full_model(prepared.index)]
        model = without_views(keep_float32(whole[0], prepared.index, nodes, weights))   # the file written
        out.checks += 1
        try:
            after = recheck(model)
        except DriftTuiError as exc:    # ONNX Runtime refused the copy: said, and the next candidate tried
            out.refused.append(f"{', '.join(L.module or '(root)' for L in kept)}: {first_line(exc)}")
            return False, None, None
        return after.verdict == "ok", model, after

    by_index = {L.index: L for L in result.layers}
    kept: list[Any] = []

    def add(L: Any) -> None:
        # a QOperator layer goes with the layers whose quantized outputs it reads (keep_qoperator.unit)
        kept.extend(by_index[c] for c in unit(prepared.index, budgets, L.index) if by_index[c] not in kept)

    for L in over:
        add(L)
    ok, model, after = within(kept) if kept else (False, None, None)
    if over and not ok and after is not None and _no_gain(result, after) \
            and all(L.budget.share is not None and L.budget.share < GENUINE_SHARE
                    and not L.budget.rounding_explains for L in over):
        # keeping them all in float32 changes nothing: not their precision (a wrong attribute); never
        # where their recomputation in the file's precision measured that error (decide: precision)
        return KeepList(genuine=[L.module or "(root)" for L in over], indices=[L.index for L in over],
                        checks=out.checks)
    must = list(kept)
    ok, model, after = _grown(rest, kept, add, within, (ok, model, after))
    if ok:
        kept, model, after = _pruned(kept, must, within, model, after)
    out.model, out.after, out.verified, out.unkept = model, after, ok, sorted(unkept)
    return _named(out, kept, budgets, prepared.index, result)


def _grown(rest: list[Any], kept: list[Any], add: Callable[[Any], None], within: Callable,
           state: tuple[bool, Any, Any]) -> tuple[bool, Any, Any]:
    """The layers of ``rest`` added to ``kept`` in turn while the copy is over budget; a layer whose copy ONNX
    Runtime refused (``within`` gives no model) is taken out again and the next candidate tried."""
    ok, model, after = state
    for L in rest:
        if ok:
            break
        before = list(kept)
        add(L)
        ok, model, after = within(kept)
        if model is None:
            kept[:] = before
    return ok, model, after


def _over_and_rest(result: Any, budgets: dict) -> tuple[list[Any], list[Any]]:
    """The reduced layers over their budget, and the other reduced layers by their share of the output error."""
    over = [L for L in result.layers if L.budget is not None and L.budget.over and budgets.get(L.index)
            and budgets[L.index].node_ids]
    rest = sorted((L for L in result.layers if L.budget is not None and L not in over
                   and budgets.get(L.index) is not None and budgets[L.index].node_ids),
                  key=lambda L: -(L.budget.share or 0.0))
    return over, rest


def _named(out: KeepList, kept: list[Any], budgets: dict, index: Any, result: Any) -> KeepList:
    """``out`` with the kept layers and their nodes in the user's converter's words."""
    nodes = {k for L in kept for k in budgets[L.index].node_ids}
    out.layers = [L.module or "(root)" for L in kept]
    out.indices = [L.index for L in kept]
    out.nodes = original_names(index, nodes)
    out.forms = converter_forms(index, nodes, result.precision.format if result.precision is not None else "")
    return out


def _genuine_by_decide(result: Any) -> Optional[KeepList]:
    """decide's word that no keep-list applies: the origin is a genuine drift (not a precision loss:
    name it, not a consequence further down), or a layer's weight is not the model's."""
    o = result.drift_origin
    if o is not None and result.precision is not None and result.precision.cause == "genuine drift":
        return KeepList(genuine=[o.module or "(root)"], indices=[o.layer])
    wrong = [L for L in result.layers if WEIGHT_NOT_THE_MODELS in L.note or ATTRIBUTE_NOT_THE_MODELS in L.note]
    if wrong:
        return KeepList(genuine=[L.module or "(root)" for L in wrong], indices=[L.index for L in wrong])
    return None


def _no_gain(before: Any, after: Any) -> bool:
    """The copy's outputs are no closer to torch than the file's (max |d| within 10%)."""
    def worst(r: Any) -> float:
        return max((o.metrics.max_abs.worst for o in r.outputs if o.metrics is not None), default=0.0)
    return worst(after) >= 0.9 * worst(before)


def _pruned(kept: list[Any], must: list[Any], within: Callable, model: Any, after: Any) -> tuple[list[Any], Any, Any]:
    """Drop each kept layer added for the outputs (not in ``must``: the layers over their own budget,
    which the verdict needs kept) whose removal still leaves the copy within budget, latest first."""
    for L in [x for x in reversed(kept) if x not in must]:
        trial = [x for x in kept if x is not L]
        ok, m, a = within(trial)
        if ok:
            kept, model, after = trial, m, a
    return kept, model, after


def unkept_why(keep: KeepList) -> str:
    """Why a keep-list could not be verified, when the patch left ops quantized or ONNX Runtime refused copies
    ("" otherwise)."""
    said = keep.refused_why()
    if not keep.unkept:
        return said
    return (f" (the copies left {', '.join(keep.unkept)} quantized: drifttui has no float32 form of "
            "these ops, so the layers that hold them could not be kept; exclude them in your converter "
            "and check again)") + said

