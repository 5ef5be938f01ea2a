"""Verified causes: localise inside the origin, try patches, keep the ones that remove the drift.

``verify_at_origin(ctx, findings)`` (called by ``explain.findings``, after ``decide``):

1. ``origin_case`` cuts the drift origin's own nodes out of the graph, with the PyTorch-side
   inputs of its worst sample and the PyTorch outputs as expected values;
2. ``localise`` runs them in ONNX Runtime and in ``onnx.reference.ReferenceEvaluator`` (the
   spec's implementation), node by node: runtime deviation or export mistranslation;
3. every check's patch and every candidate patch (``candidates``, ``weights``) is applied to a
   copy of those nodes and run on the same inputs; a patch that brings the origin's local
   error under the tolerance verifies its finding; when none does, the origin module is
   re-exported alone (``reexport``);
4. findings are ranked: verified first, then errors at the origin, then the rest; a hygiene
   warning never heads the list while the origin drifts.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

import torch

from drifttui.core.explain.causes.propose import constants

from drifttui.core.explain.causes.propose import rewrites
from drifttui.core.explain.causes.propose.candidates import graph_candidates
from drifttui.core.explain.causes.locate.case import Case, origin_case, why_no_case
from drifttui.core.explain.causes.locate.evaluate import Eval, Localisation, localise, ort_error
from drifttui.core.explain.causes.locate.fx_localise import describe, first_failing_inner, fx_localise, torch_calls, widen
from drifttui.core.explain.causes.holds import hold
from drifttui.core.explain.causes.propose.nopatch import explain_no_patch
from drifttui.core.explain.causes.propose.ablation import by_what_it_changed
from drifttui.core.explain.causes.propose.patch_budget import affordable, budget, by_likelihood, left_untried
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply
from drifttui.core.explain.causes.propose.precision_loss import precision_finding
from drifttui.core.explain.causes.propose.reexport import lowering_class, try_reexport, variants
from drifttui.core.explain.causes.locate.torch_op import name_torch_ops
from drifttui.core.explain.causes.propose.saturation_cause import saturation_finding
from drifttui.core.explain.causes.propose.nan_select import nan_select_patches
from drifttui.core.explain.causes.propose.singular import ATTRIBUTE_CLASSES, nan_fed, singular_patches
from drifttui.core.explain.causes.propose.weights import torch_tensors, weight_candidates
from drifttui.core.onnx.edit.ort_workarounds import RANK
from drifttui.core.result.codec import clean
from drifttui.core.result import SEVERITY_ORDER, Finding, display_name

EQUIVALENT = ("workaround", "resize_gather")     # rewrites that compute the same maths otherwise
# the class of the node the localisation names (a Cast that is itself wrong is a dtype story)
_OP_CLASS = {"Resize": "interpolation", "Upsample": "interpolation", "AveragePool": "padding", "Pad": "padding",
             "MaxPool": "padding", "LayerNormalization": "normalization", "BatchNormalization": "normalization",
             "InstanceNormalization": "normalization", "GroupNormalization": "normalization", "Cast": "dtype"}


@dataclasses.dataclass
class Trial:
    patch: Patch
    after: Eval                               # on the origin's worst sample
    fresh: list[dict[str, Any]] = dataclasses.field(default_factory=list)   # holds.py: on fresh samples


@dataclasses.dataclass
class Explanation:
    case: Optional[Case]
    loc: Optional[Localisation]
    trials: list[Trial]
    findings: list[Finding]
    no_case: str = ""               # why there is no case (repro / repair print it)
    skipped: int = 0                # candidate patches left untried by the budget (budget())
    skipped_exports: list[str] = dataclasses.field(default_factory=list)   # re-exports left untried (export_budget)

    @property
    def verified(self) -> list[Trial]:
        return [t for t in self.trials if t.after.ok and not t.after.fails]


def _key(spec: dict[str, Any]) -> str:
    return json.dumps({k: spec.get(k) for k in ("op", "node", "name", "value", "rewrite", "form", "scales", "shortcut",
                                                 "nodes")}, sort_keys=True, default=str)


def _origin_module(ctx: Any, case: Case) -> Any:
    return ctx.modules().get(case.module)


def _folds(ctx: Any, case: Case) -> list[tuple[str, Any, str, Any]]:
    """(conv name, conv, bn name, bn) for BatchNorms in the origin folded into the Conv called before."""
    mods = ctx.modules()
    out = []
    for c in ctx.calls:
        m = mods.get(c.module)
        if not isinstance(m, torch.nn.modules.batchnorm._BatchNorm) or c.index == 0:
            continue
        if not (c.module == case.module or c.module.startswith(case.module + ".") or case.module == ""):
            continue
        prev = ctx.calls[c.index - 1]
        conv = mods.get(prev.module)
        if isinstance(conv, torch.nn.modules.conv._ConvNd):
            out.append((prev.module, conv, c.module, m))
    return out


def candidate_patches(ctx: Any, case: Case, findings: list[Finding], loc: Optional[Localisation] = None) -> list[Patch]:
    module = _origin_module(ctx, case)
    nodes = set(case.nodes)
    out: list[Patch] = []
    for f in findings:
        if f.patch and f.patch.get("op") in ("set_attribute", "remove_cast", "rewrite", "replace_constant") \
                and f.patch.get("node", f.patch.get("name")) in nodes | {v for n in case.model.graph.node for v in n.input}:
            out.append(Patch(dict(f.patch), f.check, f.message, f.fix, f.kind if f.kind != "unknown" else "export",
                             module=f.module, nodes=list(f.onnx_nodes)))
    if loc is not None:
        out.extend(rewrites.workaround_patches(case, loc.first_node, loc.kind))
        out.extend(singular_patches(case, loc))
        out.extend(nan_select_patches(case, loc))
    dynamic = any(d.dim_param for i in ctx.index.model.graph.input for d in i.type.tensor_type.shape.dim)
    out.extend(rewrites.resize_gather_patches(case, loc.kind if loc is not None else "unknown", dynamic))
    out.extend(name_torch_ops(list(graph_candidates(case, module, ctx.index.elem_types)),
                              lambda t: torch_calls(ctx, case, t)))
    # a constant a check already explains (an epsilon) is that check's story, not a second one
    explained = {p.spec.get("name") for p in out if p.spec.get("op") == "replace_constant"}
    out.extend(p for p in constants.fx_constant_patches(case) if p.spec.get("name") not in explained)
    out.extend(rewrites.candidates(case, module, _types(ctx, case), lambda t: torch_calls(ctx, case, t)))
    if _at_export_shapes(ctx):      # a size baked in at export time is no story when nothing was resized
        out = [p for p in out if "baked" not in p.spec]
    out.extend(weight_candidates(case, torch_tensors(module, case.module, _folds(ctx, case))))
    seen: set[str] = set()
    unique: list[Patch] = []
    for p in out:
        k = _key(p.spec)
        if k not in seen:
            seen.add(k)
            unique.append(p)
    return unique


def _at_export_shapes(ctx: Any) -> bool:
    """The file runs at the shapes it was exported at: every graph input's dims are static and equal
    the runtime sample's (then no constant of the file can hold a size baked in for other shapes)."""
    graph = ctx.index.model.graph
    init = {t.name for t in graph.initializer}
    declared = {i.name: [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
                for i in graph.input if i.name not in init}
    if any(v is None for dims in declared.values() for v in dims):
        return False
    try:
        feeds = ctx.feeds(ctx.sample(0))
    except Exception:  # noqa: BLE001 - unknown: keep the story
        return False
    return all(list(feeds[k].shape) == dims for k, dims in declared.items() if k in feeds)


def _types(ctx: Any, case: Case) -> dict[str, int]:
    from onnx import helper

    import onnx

    types = dict(ctx.index.elem_types)
    try:
        inferred = onnx.shape_inference.infer_shapes(case.model)
        for vi in inferred.graph.value_info:
            if vi.type.tensor_type.elem_type:
                types.setdefault(vi.name, vi.type.tensor_type.elem_type)
    except Exception:  # noqa: BLE001 - inference is a help, not a requirement
        pass
    for k, arr in case.feeds.items():
        types.setdefault(k, helper.np_dtype_to_tensor_dtype(arr.dtype))
    return types


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
        trials.append(Trial(p, ort_error(case, model)))
    return trials


def verify_at_origin(ctx: Any, findings: list[Finding], reexport: bool = True) -> Explanation:
    """Verify what can be verified at the drift origin; the ranked findings."""
    key = f"causes:explain:{reexport}"
    if key in ctx.cache:
        return ctx.cache[key]
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
    skipped, skipped_exports = 0, []
    if loc.ort.fails:
        every = candidate_patches(ctx, case, findings, loc)
        own = sum(1 for p in every if p.spec in [f.patch for f in findings])
        ordered = by_likelihood(every, loc, own)
        cap = max(budget(case), own)
        skipped = max(0, len(ordered) - cap)
        ctx.say(f"causes: trying {min(cap, len(ordered))} candidate patch(es) on the origin's nodes")
        trials = verify(case, ordered[:cap], ctx.cancel)
        if any(t.after.ok and not t.after.fails for t in trials):
            ctx.say("causes: checking the patches that work on fresh samples")
        hold(ctx, trials)
        trials = by_what_it_changed(case, trials, lambda ps: hold(ctx, verify(case, ps, ctx.cancel)))
        # a unit with a folded producer: the origin module alone is not what the case computes
        if reexport and not case.folded and not any(t.after.ok and not t.after.fails for t in trials):
            tried, skipped_exports = affordable(variants(ctx), case)
            for variant in tried:
                ctx.say(f"causes: re-exporting {display_name(case.module)} alone with {variant.why}")
                patch, ev = try_reexport(ctx, case, variant, loc)
                if patch is not None:
                    trials.append(Trial(patch, ev))
                    hold(ctx, trials[-1:])
                    if trials[-1].after.ok and not trials[-1].after.fails:
                        # a constant it names heads instead (the re-export stays its evidence)
                        trials[-1:] = _witness_constants(ctx, case, trials[-1]) or trials[-1:]
                        break
    if not loc.ort.fails:
        # the origin's own nodes pass on its worst sample (e.g. the error needs upstream noise):
        # nothing to verify here, and no claim that the origin drifts on its own
        exp = Explanation(case, loc, [], rank(findings, case.module))
        ctx.cache[key] = exp
        return exp
    merged = merge(findings, case, loc, trials, skipped, skipped_exports)
    exp = Explanation(case, loc, trials, rank(merged, case.module), skipped=skipped, skipped_exports=skipped_exports)
    ctx.cache[key] = exp
    return exp


def _precision_story(ctx: Any, findings: list[Finding]) -> Optional[Explanation]:
    """The origin's error told by the file's precision, where no mistranslation patch or re-export can
    tell: the CPU's int8 kernel saturating, or a precision loss; None otherwise."""
    paid = precision_finding(ctx)
    saturated = saturation_finding(ctx)
    if saturated is not None:   # the CPU's int8 kernel computes a wrong product: no mistranslation either
        return Explanation(None, None, [], rank([saturated, *findings], saturated.module),
                           "the CPU's int8 kernel saturates (re-quantize with reduce_range=True, or keep the "
                           "nodes in float32: step 4, repair)")
    if paid is not None:
        return Explanation(None, None, [], rank([paid, *findings], paid.module),
                           "the origin pays for the file's precision (keep it in float32: step 4, repair)")
    return None


def _witness_constants(ctx: Any, case: Case, reexport: Trial) -> list[Trial]:
    """A verified re-export is a correct graph to diff against: a constant of the node it names as
    wrong that it holds otherwise (constants.py).  Verified like any patch; one that verifies says
    which number is wrong and repair edits that constant instead of grafting."""
    p = reexport.patch
    patches = list(constants.witness_constant_patches(case, p.nodes[0] if p.nodes else None,
                                                      p.graft.model if p.graft is not None else None,
                                                      p.spec.get("exporter", "")))
    out = [t for t in verify(case, patches, ctx.cancel) if t.after.ok and not t.after.fails]
    hold(ctx, out)
    return [t for t in out if t.after.ok and not t.after.fails][:1]


def _localise(ctx: Any, case: Case) -> tuple[Case, Localisation]:
    """``localise``, then, for a dynamo file, the wrong node by its own error against the origin's FX
    values (fx_localise): it names the first node (a runtime deviation keeps the reference
    evaluator's).  When the case's outputs pass while an inner value fails against torch (a child
    module fed torch's value of a wrong input: torch's value from the FX graph, or from the hooks
    for a TorchScript file), the case also compares that value."""
    loc = localise(case)
    fx = fx_localise(ctx, case)
    inner = (fx.accumulated if fx is not None else first_failing_inner(ctx, case)) if not loc.ort.fails else None
    if inner:
        case = widen(ctx, case, inner)
        loc = localise(case)
    if fx is None:
        return case, loc
    loc.fx = fx
    if fx.wrong is not None and (loc.kind != "runtime" or loc.first_node is None):
        loc.first_node, loc.first_node_op = fx.wrong.nodes[-1], fx.wrong.op_types[-1]
        loc.note = "; ".join(x for x in (loc.note, describe(fx, case.module)) if x)
    return case, loc


def _best(verified: list[Trial], findings: list[Finding], loc: Optional[Localisation] = None) -> list[Trial]:
    """One verified trial per drift class, the one with the smallest remaining error first."""
    claimed = {f.check for f in findings if f.severity == "error"}
    wrong = set(loc.fx.wrong.nodes) if loc is not None and loc.fx is not None and loc.fx.wrong is not None else set()
    by_class: dict[str, Trial] = {}
    # an equivalent rewrite of a right graph (a workaround, Gathers for a Resize) tells less than a
    # patch that fixes what the graph got wrong: within a class, it heads only when nothing else verifies
    # (two workarounds that both verify: the catalogue's order, the more robust form first)
    for t in sorted(verified, key=lambda t: (not t.patch.graph_level, t.patch.spec.get("rewrite") in EQUIVALENT,
                                             RANK.get(t.patch.spec.get("form"), 0), t.after.max_abs)):
        by_class.setdefault(t.patch.check, t)
    # the patch at the node the FX values name as wrong tells that node's story: it heads
    return sorted(by_class.values(), key=lambda t: (wrong.isdisjoint(t.patch.nodes) if wrong else False,
                                                   t.patch.check not in claimed, not t.patch.graph_level,
                                                   t.after.max_abs))


def merge(findings: list[Finding], case: Case, loc: Localisation, trials: list[Trial], skipped: int = 0,
          skipped_exports: Optional[list[str]] = None) -> list[Finding]:
    before = loc.ort.max_abs
    verified = _best([t for t in trials if t.after.ok and not t.after.fails], findings, loc)
    untried = {"tried": len(trials), "skipped": skipped or None, "skipped_exports": skipped_exports or None}
    out = list(findings)
    used: set[int] = set()
    for t in verified:
        p = t.patch
        at = next((k for k, f in enumerate(out) if k not in used and f.check == p.check
                   and (set(f.onnx_nodes) & set(p.nodes) or f.module == case.module)), None)
        kind = p.kind if loc.kind != "runtime" or p.kind == "model" else "runtime"
        fields = dict(verified=True, patch=p.spec, local_before=before, local_after=t.after.max_abs, kind=kind,
                      severity="error")
        if at is not None:
            f = out[at]
            if f.patch != p.spec:       # verified by another patch than the check's: say what that one changed
                fields.update(message=_verified_text(p, t, loc.ort, case) + left_untried(skipped, []), fix=p.fix)
            out[at] = dataclasses.replace(f, evidence={**f.evidence, "verification": _ev(p, t, loc, untried)}, **fields)
            used.add(at)
        else:
            out.append(Finding(p.check, "error", case.module, p.nodes or list(case.nodes[:3]),
                               _verified_text(p, t, loc.ort, case) + left_untried(skipped, []),
                               {"verification": _ev(p, t, loc, untried)}, p.fix,
                               **{k: v for k, v in fields.items() if k != "severity"}))
            used.add(len(out) - 1)
    if not verified:
        tried = {(t.patch.check, n) for t in trials for n in t.patch.nodes}
        for k, f in enumerate(out):
            if f.module == case.module and f.severity == "error":
                was_tried = any((f.check, n) in tried for n in f.onnx_nodes) or f.patch is not None
                out[k] = dataclasses.replace(f, verified=False if was_tried else None, local_before=before,
                                             kind=loc.kind if loc.kind != "unknown" else f.kind)
        if not any(f.module == case.module and f.severity == "error" for f in out):
            out.append(_unexplained(case, loc, trials, skipped, skipped_exports or []))
    return out


def _verified_text(p: Patch, t: Trial, before: Eval, case: Optional[Case] = None) -> str:
    unit = (f" ({', '.join(case.folded)} compared with {case.module} as one unit: the exporter folded its "
            f"output into {case.module}'s nodes)" if case is not None and case.folded else "")
    return (f"{p.why}; verified: with the patch the origin's local error falls from {before.text()} to "
            f"{t.after.max_abs:.3g}{unit}")


def _ev(p: Patch, t: Trial, loc: Localisation, untried: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The verification's evidence; ``untried``: how many patches were tried and what the budget left
    untried (patch_budget.py), so a verified cause also says what was not looked at."""
    return clean({"patch": p.spec, **(untried or {}), "local_before": loc.ort.max_abs, "local_after": t.after.max_abs,
                  "nonfinite_before": loc.ort.nonfinite or None,
                  "reference_evaluator_max_abs": loc.reference.max_abs if loc.reference else None,
                  "localisation": loc.note, "first_divergent_node": loc.first_node,
                  **(loc.fx.evidence() if loc.fx is not None else {})})


def _unexplained(case: Case, loc: Localisation, trials: list[Trial], skipped: int = 0,
                 skipped_exports: Optional[list[str]] = None) -> Finding:
    """The origin drifts on its own and nothing tried removed it.  The class is the mechanism's: the
    node the localisation names (never the first op recognised among the origin's nodes), a wrong
    lowering when the graph itself computes otherwise (``kind: export``), else ``op-compat``."""
    ops = [n.op_type for n in case.model.graph.node]
    first = loc.first_node_op or ""
    check = _OP_CLASS.get(first) or ("lowering" if loc.kind == "export" else "op-compat")
    left = left_untried(skipped, skipped_exports)
    msg = (f"{display_name(case.module)} drifts on its own (local error {loc.ort.text()} over {len(ops)} node(s)) and no "
           f"patch among {len(trials)} tried removed it{left}; {loc.note or 'the reference evaluator could not tell'}")
    ev = {"localisation": loc.note, "first_divergent_node": loc.first_node, "ops": ops[:20],
          "tried": [t.patch.spec for t in trials][:20], "skipped": skipped or None,
          "skipped_exports": skipped_exports or None,
          "reference_evaluator_max_abs": loc.reference.max_abs if loc.reference else None}
    fix = ("report the op to ONNX Runtime with `drifttui repro`" if loc.kind == "runtime" else
           "run `drifttui repro` and compare the nodes with the torch forward by hand")
    nodes = [loc.first_node] if loc.first_node else list(case.nodes[:3])
    wrong = loc.fx.wrong if loc.fx is not None else None
    if wrong is not None and loc.kind != "runtime":
        check = lowering_class(wrong.target, wrong.op_types)
        nodes = list(wrong.nodes)
        msg = (f"{display_name(case.module)} drifts on its own: {describe(loc.fx, case.module)}; no patch among "
               f"{len(trials)} tried removed it{left}")
        fix = (f"the exporter's lowering of torch's {wrong.target} computes otherwise than torch: write that call in a "
               f"form the exporter lowers right, or report it to torch.onnx with `drifttui repro` (the case names "
               f"the nodes)")
        ev.update(clean(loc.fx.evidence()))
    if check in ATTRIBUTE_CLASSES and nan_fed(case, nodes[-1] if nodes else None):
        check = "op-compat"
        msg += f"; {nodes[-1]} is fed NaN: the ONNX op treats NaN otherwise than torch (torch propagates it)"
    known = explain_no_patch(case)
    if known is not None:
        check, msg, fix, nodes = known
    return Finding(check, "error", case.module, nodes, msg, clean(ev), fix, verified=False, patch=None,
                   local_before=loc.ort.max_abs, kind=loc.kind)


def rank(findings: list[Finding], origin: Optional[str]) -> list[Finding]:
    """Verified first, then by severity, then those at the origin, then unverified before refuted."""
    return sorted(findings, key=lambda f: (f.verified is not True, SEVERITY_ORDER.get(f.severity, 3), f.module != origin,
                                           f.verified is False))


__all__ = ["Explanation", "verify_at_origin", "origin_case", "rank", "verify", "candidate_patches"]
