"""Verified causes: localise inside the origin, try patches, keep the ones that remove the drift.

``verify_at_origin(ctx, findings)`` (called by ``explain.findings``, after ``decide``):

1. ``origin_case`` cuts the drift origin's own nodes out of the graph, with the PyTorch-side
   inputs of its worst sample and the PyTorch outputs as expected values;
2. ``localise`` runs them in ONNX Runtime and in ``onnx.reference.ReferenceEvaluator`` (the
   spec's implementation), node by node: runtime deviation or export mistranslation;
3. every check's patch and every candidate patch (``propose.assemble``), within a budget chosen by
   likelihood (``patch_budget``) and tried in the order the findings' ranking prefers
   (``conclude.headline_order``), is applied to a copy of those nodes and run on the same inputs;
   the first that brings the origin's local error under the tolerance, on the worst sample and on
   fresh ones (``holds``), verifies its finding and ends the search (the rest are counted as not
   tried); when none does, the origin module is re-exported alone (``reexport``);
4. ``conclude`` merges the verified patch into the findings and ranks them: verified first, then
   errors at the origin, then the rest; a hygiene warning never heads the list while the origin drifts.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

from drifttui.core.explain.causes.conclude import Trial, headline_order, merge, rank
from drifttui.core.explain.causes.holds import hold
from drifttui.core.explain.causes.locate.case import Case, origin_case, why_no_case
from drifttui.core.explain.causes.locate.evaluate import Eval, Localisation, at_level, judged_error, localise
from drifttui.core.explain.causes.locate.fx_localise import fx_localise
from drifttui.core.explain.causes.locate.inner_values import failing_inner, first_failing_alone, widen
from drifttui.core.explain.causes.locate.fx_words import describe
from drifttui.core.explain.causes.locate.torch_align import calls as aligned_calls, groups as aligned_groups, origin_torch_op
from drifttui.core.explain.causes.propose.edits import constants
from drifttui.core.explain.causes.propose.edits.folded_constant import folded_patches
from drifttui.core.explain.causes.propose.ablation import by_what_it_changed
from drifttui.core.explain.causes.propose.assemble import candidate_patches
from drifttui.core.explain.causes.propose.numerics.conditioning import (conditioned_first, float64_trial,
                                                                       torch_own_error)
from drifttui.core.explain.causes.propose.numerics.decisive_rounding import decisive
from drifttui.core.explain.causes.propose.numerics.opmath import computes_low, opmath_patches
from drifttui.core.explain.causes.propose.numerics.opmath_inner import inner_opmath_patches
from drifttui.core.explain.causes.propose.numerics.origin64 import origin64_patches
from drifttui.core.explain.causes.propose.patch_budget import affordable, budget, by_likelihood
from drifttui.core.explain.causes.propose.numerics.precision_loss import precision_finding
from drifttui.core.explain.causes.propose.reexport.variants import try_reexport, unedited_witness, variants
from drifttui.core.explain.causes.propose.residual import residual_patches
from drifttui.core.explain.causes.propose.edits.resize_map import measured_map_patches
from drifttui.core.explain.causes.propose.numerics.saturation_cause import saturation_finding
from drifttui.core.explain.causes.propose.numerics.torch_kernels import kernel_trial
from drifttui.core.explain.causes.propose.numerics.torch_rounding import within_torch_rounding
from drifttui.core.explain.causes.propose.siblings import sibling_patches
from drifttui.core.explain.causes.propose.reexport.witness_attributes import witness_attribute_patches
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply
from drifttui.core.result import Finding, display_name


@dataclasses.dataclass
class Explanation:
    case: Optional[Case]
    loc: Optional[Localisation]
    trials: list[Trial]
    findings: list[Finding]
    no_case: str = ""               # why there is no case (repro / repair print it)
    skipped: int = 0                # candidate patches left untried by the budget (budget())
    not_tried: int = 0              # candidate patches within the budget left untried: one verified first
    skipped_exports: list[str] = dataclasses.field(default_factory=list)   # re-exports left untried (export_budget)

    @property
    def verified(self) -> list[Trial]:
        return [t for t in self.trials if t.after.ok and not t.after.fails]


def verify(case: Case, patches: list[Patch], cancel: Any = None) -> list[Trial]:
    trials = []
    for p in patches:
        if cancel is not None:
            cancel.check()
        try:
            model = apply(case.model, p)
        except PatchError as exc:
            trials.append(Trial(p, Eval(float("inf"), True, False, str(exc))))
            continue
        trials.append(Trial(p, judged_error(case, p, model)))
    return trials


def first_verified(ctx: Any, case: Case, patches: list[Patch]) -> tuple[list[Trial], int]:
    """The patches tried in order until one verifies and holds on fresh samples (``hold``: one that
    fits the worst sample alone is marked failing and the search goes on); the trials, and how many
    patches were left untried because one verified."""
    trials: list[Trial] = []
    widened: Optional[int] = None       # a patch that passed only at a widened budget (opmath per_op's gain)
    for k, p in enumerate(patches):
        if widened is not None and "rtol" in p.spec:
            continue                    # after one: only a patch judged at the case's own tolerance can head it
        ran = _verify_once(ctx, case, [p])
        trials += ran
        if ran and _passes(ran[-1]):
            ctx.say("causes: checking the patch that works on fresh samples")
            hold(ctx, trials[-1:])
            if _passes(trials[-1]) and trials[-1].after.widened and widened is None:
                widened = len(trials) - 1   # the rest of a float16 origin may be another story: the scalar's
            elif _passes(trials[-1]):
                return (trials if widened is None else _heading(trials, widened)), len(patches) - k - 1
    return trials, 0


def _heading(trials: list[Trial], widened: int) -> list[Trial]:
    """The trials with the one that passed only at a widened budget marked as not heading: a later patch, judged at
    the case's own tolerance, removed the rest too (a Python scalar held in float16 under the dropped roundings,
    forms45r's ArcFace margin: ``per_op`` alone leaves the scalar's error, inside the float16 budget)."""
    out = list(trials)
    t = out[widened]
    said = t.after.error or "passed only at the float16 budget; a later patch removed the rest"
    out[widened] = dataclasses.replace(t, after=dataclasses.replace(t.after, fails=True, error=said))
    return out


def _verify_once(ctx: Any, case: Case, patches: list[Patch]) -> list[Trial]:
    """``verify``, each patch run on ``case`` once per diagnosis: a patch an earlier step ran on the same case (the
    precision story's opmath counterfactual, ``_rounds_as_torch``) is not run again; its trial is a new one with the
    same local error, held afresh."""
    memo = ctx.cache.setdefault("causes:tried", {})
    out = []
    for p in patches:
        k = (id(case), json.dumps(p.spec, sort_keys=True, default=str))
        if k not in memo or memo[k][0] is not case:
            memo[k] = (case, [t.after for t in verify(case, [p], ctx.cancel)])
        out.extend(Trial(p, dataclasses.replace(ev)) for ev in memo[k][1])
    return out


def _passes(t: Trial) -> bool:
    return t.after.ok and not t.after.fails


def verify_at_origin(ctx: Any, findings: list[Finding], reexport: bool = True) -> Explanation:
    """Verify what can be verified at the drift origin; the ranked findings.  The origin's nodes run at the level
    its layers were compared at (``evaluate.at_level``: where ONNX Runtime's optimiser made the drift, when the
    run compared the layers at a level other than ``disable``)."""
    key = f"causes:explain:{reexport}"
    if key in ctx.cache:
        return ctx.cache[key]
    with at_level(ctx.cfg.opt_level):
        return _verify_at_origin(ctx, findings, reexport, key)


def _verify_at_origin(ctx: Any, findings: list[Finding], reexport: bool, key: str) -> Explanation:
    o = ctx.result.drift_origin
    story = _precision_story(ctx, findings)
    if story is not None:
        ctx.cache[key] = story
        return story
    case = origin_case(ctx) if o is not None else None
    if case is None:
        exp = Explanation(None, None, [], rank(findings, o.module if o else None), why_no_case(ctx))
        ctx.cache[key] = exp
        return exp
    ctx.say(f"causes: localising the error inside {display_name(case.module)}")
    case, loc = _localise(ctx, case)
    trials: list[Trial] = []
    skipped, skipped_exports, unneeded = 0, [], 0
    if loc.ort.fails:
        ctx.say(f"causes: proposing patches for {display_name(case.module)}")
        every = candidate_patches(ctx, case, findings, loc)
        own = sum(1 for p in every if p.spec in [f.patch for f in findings])
        likely = by_likelihood(every, loc, own)
        cap = max(budget(case), own)
        skipped = max(0, len(likely) - cap)
        ctx.say(f"causes: trying up to {min(cap, len(likely))} candidate patch(es) on the origin's nodes")
        trials, unneeded = first_verified(ctx, case, headline_order(likely[:cap], findings, case, loc))
        trials = by_what_it_changed(case, trials, lambda ps: hold(ctx, verify(case, ps, ctx.cancel)))
        trials = decisive(case, trials, lambda ps: verify(case, ps, ctx.cancel), loc.ort.max_abs)
        # a unit with a folded producer outside the origin module: the module alone is not what the case computes
        inside = case.module + "." if case.module else ""
        if reexport and all(m.startswith(inside) for m in case.folded) and not any(_passes(t) for t in trials):
            skipped_exports = _conditioned_or_reexports(ctx, case, loc, trials)
        _last_resorts(ctx, case, loc, trials)
    if not loc.ort.fails:
        # the origin's own nodes pass on its worst sample (e.g. the error needs upstream noise):
        # nothing to verify here, and no claim that the origin drifts on its own
        exp = Explanation(case, loc, [], rank(findings, case.module))
        ctx.cache[key] = exp
        return exp
    _with_siblings(ctx, case, trials)
    merged = as_member(o, case, merge(findings, case, loc, trials, skipped, skipped_exports, unneeded))
    exp = Explanation(case, loc, trials, rank(merged, o.module if o is not None else case.module), skipped=skipped,
                      skipped_exports=skipped_exports, not_tried=unneeded)
    ctx.cache[key] = exp
    return exp


def _last_resorts(ctx: Any, case: Case, loc: Localisation, trials: list[Trial]) -> None:
    """When nothing verified yet, in order until one does (appended to ``trials``): two mechanisms composed, torch's
    measured sampling weights, the origin in float64 in the file, a patch that leaves only torch's own float32
    rounding, and the conditioning counterfactual."""
    if not any(_passes(t) for t in trials):     # a folded value of parameters no re-export computed: torch's value
        trials += first_verified(ctx, case, folded_patches(case, loc, last=True))[0]
    if not any(_passes(t) for t in trials):     # two mechanisms: most of the error removed, then the rest
        op = loc.torch_op.name if loc.torch_op is not None else None
        trials += first_verified(ctx, case, residual_patches(case, trials, loc.ort, op))[0]
    if not any(_passes(t) for t in trials) and measured_map_patches(ctx, case):
        # the last resort: an equivalent computation, torch's own weights measured from the call
        ctx.say("causes: trying torch's own sampling weights for the origin's Resize")
        trials += first_verified(ctx, case, measured_map_patches(ctx, case))[0]
    if not any(_passes(t) for t in trials):
        # nothing is wrong on its own: is it the file's float32 rounding, amplified where torch's is not?
        ctx.say("causes: computing the origin in float64 in the file")
        trials += first_verified(ctx, case, origin64_patches(case))[0]
    if not any(_passes(t) and (t.patch.spec.get("op") != "float64" or not computes_low(case)) for t in trials):
        # a kernel's error stacked on torch's own float32 rounding; at a float16 origin tried where only the
        # conditioning counterfactual verified (conditioned_first; its float64 drops the model's own float16 too):
        # a named mechanism leaving what torch's own rounding leaves heads it
        trials.extend(t for t in [within_torch_rounding(trials, loc.ort, torch_own_error(ctx, case), Trial)]
                      if t is not None)
    if not any(_passes(t) for t in trials):
        # no file computes what torch computes: is it float32 rounding of an ill-conditioned input?
        trials.extend(Trial(*t) for t in [float64_trial(ctx, case, loc)] if t is not None)


def _conditioned_or_reexports(ctx: Any, case: Case, loc: Any, trials: list[Trial]) -> list[str]:
    """torch's own kernel of one function correctly rounded (torch_kernels.py), or the float64 counterfactual, first
    where either shows torch's own float32 rounding is the drift (no file computes it: the re-exports are skipped,
    and said so), else the re-exports (``_reexports``)."""
    ctx.say(f"causes: computing {display_name(case.module)} in float64 (is torch's own float32 rounding the drift?)")
    first = kernel_trial(ctx, case, loc) or conditioned_first(ctx, case, loc)
    if first is None:
        return _reexports(ctx, case, loc, trials)
    trials.append(Trial(*first))
    tried, skipped = affordable(variants(ctx), case)
    return [v.why for v in tried] + list(skipped)


def _reexports(ctx: Any, case: Case, loc: Any, trials: list[Trial]) -> list[str]:
    """The origin re-exported alone, the affordable variants in order, each held, until one verifies (appended to
    ``trials``); the variants skipped for their cost."""
    tried, skipped_exports = affordable(variants(ctx), case)
    for variant in tried:
        ctx.say(f"causes: re-exporting {display_name(case.module)} alone with {variant.why}")
        patch, ev = try_reexport(ctx, case, variant, loc)
        if patch is not None:
            trials.append(Trial(patch, ev))
            hold(ctx, trials[-1:])
            if _passes(trials[-1]):
                # a constant or an attribute it names heads instead (the re-export stays its evidence)
                trials[-1:] = _witnessed(ctx, case, trials[-1]) or trials[-1:]
                break
    return skipped_exports


def as_member(o: Any, case: Case, findings: list[Finding]) -> list[Finding]:
    """A unit's case (locate/case.unit_call: the origin has no ONNX value of its own and was compared with the
    call that absorbed it as one unit): the error findings at the unit's call are the origin's, and say so."""
    if o is None or case.call == o.layer:
        return findings
    said = (f"{display_name(o.module)} (no ONNX value of its own: compared as one unit with the call that absorbed "
            f"it, inside {display_name(case.module)}, whose nodes compute both): ")
    return [dataclasses.replace(f, module=o.module, message=said + f.message)
            if f.module == case.module and f.severity == "error" else f for f in findings]


def _precision_story(ctx: Any, findings: list[Finding]) -> Optional[Explanation]:
    """The origin's error told by the file's precision, where no mistranslation patch or re-export can
    tell: the CPU's int8 kernel saturating, or a precision loss; None otherwise."""
    paid = precision_finding(ctx)
    saturated = saturation_finding(ctx)
    if saturated is not None:   # the CPU's int8 kernel computes a wrong product: no mistranslation either
        return Explanation(None, None, [], rank([saturated, *findings], saturated.module),
                           "the CPU's int8 kernel saturates (re-quantize with reduce_range=True, or keep the "
                           "nodes in float32: step 4, repair)")
    if paid is not None and not _rounds_as_torch(ctx):
        return Explanation(None, None, [], rank([paid, *findings], paid.module),
                           "the origin pays for the file's precision (keep it in float32: step 4, repair)")
    return None


def _rounds_as_torch(ctx: Any) -> bool:
    """The origin's float16 / bfloat16 nodes, each rounded at its output as torch rounds (the opmath
    counterfactual, propose/numerics/opmath.py), compute what torch computes: the reduced precision is the model's
    own (``torch.autocast``, a ``.half()`` module) and ONNX Runtime drops a rounding torch makes, a cause the
    usual patches tell and repair.  A converted file's float16 cannot pass that way (torch computes in float32
    there, and rounding more only moves the file further from it): its precision story stands."""
    case = origin_case(ctx)
    patches = opmath_patches(case) if case is not None else []
    return bool(patches) and any(_passes(t) for t in _verify_once(ctx, case, patches))


def _with_siblings(ctx: Any, case: Case, trials: list[Trial]) -> None:
    """A graph edit that verified: the same edit at the origin class's other calls (propose/siblings.py), and an
    opmath rewrite at the calls inside the origin (propose/numerics/opmath_inner.py)."""
    for t in trials:
        if _passes(t) and t.patch.graph_level:
            t.patch.siblings = sibling_patches(ctx, case, t.patch) + inner_opmath_patches(ctx, case.call, t.patch)


def _witnessed(ctx: Any, case: Case, reexport: Trial) -> list[Trial]:
    """A verified re-export is a correct graph to diff against: a constant of the node it names as
    wrong that it holds otherwise (constants.py), else an attribute of that node its counterpart in the
    re-export holds otherwise (witness_attributes.py).  Verified like any patch; one that verifies says
    which number or attribute is wrong and repair edits that instead of grafting."""
    p = reexport.patch
    node, witness = p.nodes[-1] if p.nodes else None, p.graft.model if p.graft is not None else None
    exporter = p.spec.get("exporter", "")
    # another exporter's numbers against a file its own exporter writes: no number of it was changed (variants.py)
    patches = [] if unedited_witness(ctx, exporter) else list(
        constants.witness_constant_patches(case, p.nodes[0] if p.nodes else None, witness, exporter))
    return _first_holding(ctx, case, patches) or _first_holding(
        ctx, case, list(witness_attribute_patches(case, node, witness, exporter)))


def _first_holding(ctx: Any, case: Case, patches: list[Patch]) -> list[Trial]:
    out = [t for t in verify(case, patches, ctx.cancel) if t.after.ok and not t.after.fails]
    hold(ctx, out)
    return [t for t in out if t.after.ok and not t.after.fails][:1]


def _localise(ctx: Any, case: Case) -> tuple[Case, Localisation]:
    """``localise``, then, for a dynamo file, the wrong node by its own error against the origin's FX
    values (fx_localise): it names the first node (a runtime deviation keeps the reference
    evaluator's).  The torch op the drift starts in: the FX node's, else aligned by value (torch_align).  When the case's outputs pass while an inner value fails against torch (a child
    module fed torch's value of a wrong input: torch's value from the FX graph, or from the hooks
    for a TorchScript file), the case also compares that value."""
    loc = localise(case)
    o = ctx.result.drift_origin
    # a unit's case (the origin folded into the call that read it): its first wrong FX node is that call's, fed the
    # file's folded result of the origin, not a lowering of its own
    fx = fx_localise(ctx, case) if o is None or case.call == o.layer else None
    inner = (fx.accumulated if fx is not None else failing_inner(ctx, case)) if not loc.ort.fails else None
    if fx is not None and not inner and not loc.ort.fails:     # as the file computes them: each value read alone
        inner = first_failing_alone(case, fx.torch_values)
    if inner:
        case = widen(ctx, case, inner)
        loc = localise(case)
    if fx is not None:
        loc.fx = fx
        if fx.wrong is not None and (loc.kind != "runtime" or loc.first_node is None):
            loc.first_node, loc.first_node_op = fx.wrong.nodes[-1], fx.wrong.op_types[-1]
            loc.note = "; ".join(x for x in (loc.note, describe(fx, case.module)) if x)
    if loc.ort.fails:
        ctx.say(f"causes: naming the torch op inside {display_name(case.module)}")
        loc.torch_op = origin_torch_op(ctx, case, fx)
        loc.torch_calls = aligned_calls(ctx, case)
        loc.torch_groups = aligned_groups(ctx, case)
    return case, loc

__all__ = ["Explanation", "first_verified", "verify_at_origin", "verify"]
