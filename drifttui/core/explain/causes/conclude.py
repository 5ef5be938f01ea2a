"""What the trials conclude: the verified patches merged into the findings, and the ranking.

``merge`` keeps one verified trial per drift class (``best``), writes it into the finding it
verifies (or a new one, saying what the patch changed), and, when nothing verified, marks what was
tried and adds the origin's ``unexplained`` finding, classed by mechanism (the node the localisation
names, the ATen op whose lowering is wrong), never by the first op recognised.  ``rank`` orders the
findings: verified first, then by severity, then those at the origin.  ``headline_order`` is the
same preference said of patches before they run: ``verify`` tries them in that order and stops at
the first that verifies, which is the one this ranking would have put first.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.compensation import moves_right_values
from drifttui.core.explain.causes.locate.evaluate import Eval, Localisation
from drifttui.core.explain.causes.locate.fx_localise import fx_of
from drifttui.core.explain.causes.locate.fx_words import describe
from drifttui.core.explain.causes.locate.torch_align import TorchOp, called
from drifttui.core.explain.causes.propose.numerics.decisive_rounding import CONVERSIONS
from drifttui.core.explain.causes.propose.numerics.kernel64 import deviating_kernels
from drifttui.core.explain.causes.propose.nopatch import explain_no_patch
from drifttui.core.explain.causes.propose.patch_budget import left_untried, not_tried
from drifttui.core.explain.causes.propose.reexport.story import lowering_class
from drifttui.core.explain.causes.propose.edits.singular import ATTRIBUTE_CLASSES, nan_fed
from drifttui.core.onnx.edit.orphan_steps import ORPHAN
from drifttui.core.onnx.edit.lowerings.ort_workarounds import RANK
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.result import SEVERITY_ORDER, Finding, display_name
from drifttui.core.result.codec import clean

EQUIVALENT = ("workaround", "resize_gather", "resize_matmul")     # rewrites computing the same maths otherwise
# the class of the node the localisation names (a Cast that is itself wrong is a dtype story)
_OP_CLASS = {"Resize": "interpolation", "Upsample": "interpolation", "AveragePool": "padding", "Pad": "padding",
             "MaxPool": "padding", "LayerNormalization": "normalization", "BatchNormalization": "normalization",
             "InstanceNormalization": "normalization", "GroupNormalization": "normalization", "Cast": "dtype"}


@dataclasses.dataclass
class Trial:
    patch: Patch
    after: Eval                               # on the origin's worst sample
    fresh: list[dict[str, Any]] = dataclasses.field(default_factory=list)   # holds.py: on fresh samples
    in_file: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # holds.py: in the whole patched file


def _within_class(p: Patch) -> tuple[bool, bool, int]:
    """Which of two patches of one drift class tells it best: a graph edit before a re-export, a patch
    that fixes what the graph got wrong before an equivalent rewrite of a right graph (a workaround,
    Gathers for a Resize: they head only when nothing else verifies), two workarounds in the
    catalogue's order (the more robust form first)."""
    return not p.graph_level, p.spec.get("rewrite") in EQUIVALENT, RANK.get(p.spec.get("form"), 0)


def _wrong_nodes(loc: Optional[Localisation]) -> set[str]:
    return set(loc.fx.wrong.nodes) if loc is not None and loc.fx is not None and loc.fx.wrong is not None else set()


def _best(verified: list[Trial], findings: list[Finding], loc: Optional[Localisation] = None) -> list[Trial]:
    """One verified trial per drift class, the one with the smallest remaining error first."""
    claimed = {f.check for f in findings if f.severity == "error"}
    wrong = _wrong_nodes(loc)
    by_class: dict[str, Trial] = {}
    for t in sorted(verified, key=lambda t: (*_within_class(t.patch), t.after.max_abs)):
        by_class.setdefault(t.patch.check, t)
    # the patch at the node the FX values name as wrong tells that node's story: it heads
    return sorted(by_class.values(), key=lambda t: (wrong.isdisjoint(t.patch.nodes) if wrong else False,
                                                   t.patch.check not in claimed, not t.patch.graph_level,
                                                   t.after.max_abs))


def _target(findings: list[Finding], p: Patch, module: str, used: Any = frozenset()) -> Optional[int]:
    """The finding a verified ``p`` is written into: the first of its class at its nodes or at the origin."""
    return next((k for k, f in enumerate(findings) if k not in used and f.check == p.check
                 and (set(f.onnx_nodes) & set(p.nodes) or f.module == module)), None)


def headline_order(patches: list[Patch], findings: list[Finding], case: Case,
                   loc: Optional[Localisation] = None) -> list[Patch]:
    """``patches`` in the order ``merge`` then ``rank`` would head the findings with them, were each the
    only one verified, so that the first verified patch is the one the whole list's ranking would
    have put first (``verify`` stops there).  A patch written into a finding of its class (the
    checks' own first: their findings come first) heads by that finding's place, one at the origin
    before one elsewhere; a new finding comes after them, the one at the node the FX values name as
    wrong first, then a class a check claims, then ``_within_class``; ties keep the given order
    (the likelihood: patch_budget.by_likelihood)."""
    claimed = {f.check for f in findings if f.severity == "error"}
    wrong = _wrong_nodes(loc)

    def key(p: Patch) -> tuple[Any, ...]:
        late = _contradicted(p, loc)
        at = _target(findings, p, case.module)
        if at is not None:
            return (late, findings[at].module != case.module, at, False, False, *_within_class(p))
        return (late, False, len(findings), wrong.isdisjoint(p.nodes) if wrong else False, p.check not in claimed,
                *_within_class(p))
    return sorted(patches, key=key)


def _contradicted(p: Patch, loc: Optional[Localisation]) -> bool:
    """Whether the values contradict ``p``'s story: every node it edits computes a value the torch program computes
    too (aligned by value: ``torch_align.calls``), and none is among the nodes of the call the alignment names as the
    first wrong one.  Such a patch is tried after the others: one that verifies changes a right value to make up for
    a wrong one (a ``Cast`` to int64 floored, where torch's ``.long()`` truncates as the file does, evens out the
    truncating ``Div`` that the TorchScript exporter made of the ``>>`` after it).  A node wrong on its own (fed the
    reference evaluator's inputs: ``kernel64.deviating_kernels``) is no such value: its error is below the tolerance
    the alignment matches with, and what reads it amplifies it."""
    op = loc.torch_op if loc is not None else None
    if op is None or op.how != "values" or not op.nodes or not p.nodes:
        return False
    if {e["node"] for e in deviating_kernels(loc)} & set(p.nodes):
        return False
    return all(n in loc.torch_calls for n in p.nodes) and set(op.nodes).isdisjoint(p.nodes)


def merge(findings: list[Finding], case: Case, loc: Localisation, trials: list[Trial], skipped: int = 0,
          skipped_exports: Optional[list[str]] = None, unneeded: int = 0) -> list[Finding]:
    """``unneeded``: the candidates ``verify`` left untried because a patch verified first (said in
    the finding it verifies, with ``skipped``, the budget's)."""
    before = loc.ort.max_abs
    verified = _best([t for t in trials if t.after.ok and not t.after.fails], findings, loc)
    # a patch whose story says its nodes compute otherwise than torch, while they compute what torch computes, makes
    # up for the wrong call the alignment names: that call is named (a patch that feeds that call right, zeroing the
    # padded rows a final norm reads, keeps its story)
    compensates = bool(verified) and verified[0].patch.own_value_story and _contradicted(verified[0].patch, loc) \
        and moves_right_values(case, verified[0].patch)
    op = _patched_op(case, verified[0].patch, loc.torch_op, loc.fx, {**loc.torch_groups, **loc.torch_calls}) \
        if verified and not compensates else loc.torch_op
    untried = {"tried": len(trials), "skipped": skipped or None, "skipped_exports": skipped_exports or None,
               "not_tried": unneeded or None}
    out = list(findings)
    used: set[int] = set()
    for t in verified:
        p = t.patch
        at = _target(out, p, case.module, used)
        kind = p.kind if loc.kind != "runtime" or p.kind == "model" else "runtime"
        fields = dict(verified=True, patch=p.spec, local_before=before, local_after=t.after.max_abs, kind=kind,
                      severity="error")
        said = left_untried(skipped, []) + not_tried(unneeded, p.spec) + cut_out_only(trials)
        if at is not None:
            f = out[at]
            if f.patch != p.spec or compensates:    # verified by another patch than the check's, or not for its
                fields.update(message=_said(p, t, loc, case, compensates) + said, fix=p.fix,    # story: say what
                              onnx_nodes=list(p.nodes) or f.onnx_nodes)                         # that one changed
                if (f.module or "").startswith(case.module + "."):  # a child's hazard now tells the origin's story: the
                    fields.update(module=case.module)       # origin's, told by its torch op as the origin's are
            elif unneeded:
                fields.update(message=f.message + said)
            out[at] = dataclasses.replace(f, evidence={**f.evidence, "verification": _ev(p, t, loc, untried)}, **fields)
            used.add(at)
        else:
            out.append(Finding(p.check, "error", case.module, p.nodes or _computing(case),
                               _said(p, t, loc, case, compensates) + said,
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
    out = [_file_nodes(f) for f in out]
    op = op if verified else _story_op(case, out, loc, op)
    return [_with_torch_op(f, op) if f.module == case.module and f.severity == "error" else f for f in out]


def _story_op(case: Case, out: list[Finding], loc: Localisation, op: Any) -> Any:
    """A no-patch story's torch op (nopatch.py: the TopK whose ties it names) is its nodes' own call, as a verified
    patch's is (``_patched_op``): a sort's tied indices read by a later scatter are the sort's, not the scatter's."""
    story = next((f for f in out if f.module == case.module and f.evidence.get("no_patch")), None)
    if story is None:
        return op
    nodes = Patch({}, story.check, "", "", module=case.module, nodes=list(story.onnx_nodes))
    return _patched_op(case, nodes, op, loc.fx, {**loc.torch_groups, **loc.torch_calls})


def _file_nodes(f: Finding) -> Finding:
    """``f`` naming only the file's nodes: the ``Identity`` drifttui stands in for a computation the exporter
    dropped (orphan_steps) is not the user's, and a finding with nothing else names its module only."""
    kept = [n for n in f.onnx_nodes if ORPHAN not in n]
    return f if len(kept) == len(f.onnx_nodes) else dataclasses.replace(f, onnx_nodes=kept)


def _patched_op(case: Case, patch: Patch, op: Any, fx: Any = None, aligned: Optional[dict[str, Any]] = None) -> Any:
    """The torch op of the nodes the verifying patch changed, from their FX records (a dynamo file), unless the FX
    localisation named one of them already: the patch proved where the drift is (FNet's DFT, not the ``select``
    after it; an STFT, not the ``pow`` a value alignment spanned back over it); ``op`` otherwise.  Named by the call
    its FX node came from (``fx``'s match with the torch program), as every torch op is; a file without FX records
    by the call the alignment by value gives those nodes (``aligned``), when it named none.  Of several, the last
    that computes: a float16 chain's rounding leaves it there (``half_sum``'s sum, not the Mul before it).  A
    file without FX records names the call aligned to the changed nodes even when the localisation's first
    aligned call is another (``prefix_variance``: the CumSum a float64 accumulation changed, ``torch.cumsum``, not
    the ``s * s`` that feeds it).  A call whose ``__torch_function__`` dispatch dropped an argument
    (``dropped_args``) is named by value: the file's records are the trace's, which never saw the argument."""
    if patch.torch_op is not None:          # the story names the forward's call (an in-place update it lost), the
        if op is not None and op.target == patch.torch_op[0]:   # localisation's record of it if that names it too
            return op
        return TorchOp(patch.torch_op[0], [], [], "story", aten=patch.torch_op[1])
    if op is not None and op.dropped:
        return op
    decisive = patch.spec.get("decisive")       # propose/numerics/decisive_rounding: the rounding that matters
    names = {decisive} if decisive else set(patch.nodes or [])
    calls = fx.every if fx is not None else {}
    if not names or (op is not None and _named_there(case, op, names, calls, patch.spec.get("about"))):
        return op
    recs = [r for r in (fx_of(n) for n in case.model.graph.node if n.name in names) if r is not None]
    groups = {r: [n for n in case.model.graph.node if (fx_of(n) or ("", ""))[0] == r[0]] for r in dict.fromkeys(recs)}
    # the op the patch changed is one that computes, not the conversion out of it (a float16 add, not .float()); of
    # conversions alone, the last: the one whose output the file gets wrong (``.long().int()``'s wrap is ``int``'s)
    rec = next((r for r, mine in reversed(groups.items()) if any(n.op_type not in _CONVERSIONS for n in mine)), None) \
        or next(reversed(groups), None)
    if rec is None:     # no FX records: the call the alignment gives the nodes the patch changed, unless op holds them
        if decisive:
            return _aligned_op(case, names, aligned or {}) or op
        mine = _aligned_op(case, names, aligned or {}) if op is None or not names & set(op.nodes) else None
        return mine or op
    g, mine = calls.get(rec[0]), groups[rec]
    return TorchOp(called(getattr(g, "call", ""), getattr(g, "aten", ""), rec[1]), [n.name for n in mine],
                   [n.op_type for n in mine], "fx", aten=(g.aten if g is not None else "") or rec[1])


def _named_there(case: Case, op: Any, names: set[str], calls: dict[str, Any], anchor: Optional[str] = None) -> bool:
    """Whether the localisation's op is the call of nodes the patch changed: by the file's FX record, or by value where
    the file's own records of those nodes, if any, name that call too (a float16 DDIM step's ``1 - a`` with both
    exporters; not a dynamo ``pow`` whose aligned nodes span back over an STFT the FX record names).  A patch whose
    story is about one node (its spec's ``about``: the Softmax a ``cast_first`` computes in float32, the nodes before
    it only re-rounded) is that node's call's, not that of an input it re-rounds (the ``div`` before a
    ``softmin(dtype=)``)."""
    shared = [n for n in case.model.graph.node if n.name in names and n.name in set(op.nodes)]
    if not shared or op.how not in ("fx", "values") or (op.how == "values" and anchor in names
                                                        and anchor not in set(op.nodes)):
        return False
    recs = [r for r in (fx_of(n) for n in shared) if r is not None]
    if op.how == "fx" or not recs:
        return True
    said = {x for r in recs for g in [calls.get(r[0])] for x in (r[1], getattr(g, "call", None), getattr(g, "aten", None))}
    return bool({op.target, op.aten} & said)


def _aligned_op(case: Case, names: set[str], aligned: dict[str, Any]) -> Any:
    """The call the alignment by value gives the last node of ``names`` that computes, or None."""
    mine = [n for n in case.model.graph.node if n.name in names and n.name in aligned and n.op_type not in _CONVERSIONS]
    if not mine:
        return None
    call, aten = aligned[mine[-1].name]
    nodes = [n for n in case.model.graph.node if n.name in names and aligned.get(n.name) == (call, aten)]
    return TorchOp(call, [n.name for n in nodes], [n.op_type for n in nodes], "values", aten=aten)


_CONVERSIONS = CONVERSIONS


def _with_torch_op(f: Finding, op: Any) -> Finding:
    """An error at the origin with the torch op its drift starts in: its field, and, for an op's story
    (_OP_STORIES), its message opened with it (torch_align.TorchOp.told); unchanged when the op cannot be told."""
    if op is None:
        return f
    told = op.told(f.message) if f.check in _OP_STORIES or _relowered(f) else f.message
    return dataclasses.replace(f, torch_op=op.target, aten_op=op.aten, message=told,
                               evidence={**f.evidence, **op.evidence()})


# the classes whose story is an op's computation: their message opens with the torch op; an attribute's or a
# weight's story (normalization's epsilon, padding, a weight the file holds otherwise) names its module and
# attribute already, and keeps its words (the op is in the finding's field)
_OP_STORIES = ("lowering", "stability", "dtype", "op-compat")


def _relowered(f: Finding) -> bool:
    """A verified re-export changed lowerings, not an attribute: its story (a pooling's or a resize's node that
    computes otherwise) is an op's computation whatever its class, and opens with the op; an epsilon's story
    (normalization) names the module's attribute."""
    return bool(f.verified and isinstance(f.patch, dict) and f.patch.get("op") == "reexport"
                and f.check != "normalization")


def _computing(case: Case) -> list[str]:
    """The origin's first three nodes that compute (a patch that names no node, a whole re-export: the
    finding points at what the module computes, not at the Constants the cut begins with)."""
    ops = {n.name: n.op_type for n in case.model.graph.node}
    computing = [n for n in case.nodes if ops.get(n) not in ("Constant", "ConstantOfShape", "Identity")]
    return (computing or [n for n in case.nodes if ORPHAN not in n])[:3]


def _said(p: Patch, t: Trial, loc: Localisation, case: Case, compensates: bool) -> str:
    """The verified patch in words: its own story, or, when the values contradict that story (``_contradicted``),
    what it changed and the call whose values are the first to differ, which it makes up for."""
    if not compensates:
        return _verified_text(p, t, loc.ort, case)
    types = {n.name: n.op_type for n in case.model.graph.node}
    mine = sorted({loc.torch_calls[n][0].rsplit(".", 1)[-1] for n in p.nodes if n in loc.torch_calls})
    what = p.spec.get("rewrite") or p.spec.get("op")
    at = ", ".join(f"{types.get(n, '?')} {n}" for n in p.nodes[:3]) + (" ..." if len(p.nodes) > 3 else "")
    return (f"the file's values first differ from torch's here; the patch that removes the drift ({what} on {at}) "
            f"changes a value torch computes too (torch's {', '.join(mine) or 'forward'}, the same values there), so "
            f"it makes up for this call instead of fixing it, and its story does not hold; verified: with the patch "
            f"the origin's local error falls from {loc.ort.text()} to {t.after.max_abs:.3g}")


def _verified_text(p: Patch, t: Trial, before: Eval, case: Optional[Case] = None) -> str:
    unit = (f" ({', '.join(case.folded)} compared with {display_name(case.module)} as one unit: the exporter folded its "
            f"output into {display_name(case.module)}'s nodes)" if case is not None and case.folded else "")
    how = {"float64": "computed in float64 on both sides the origin's error",     # both sides widened, no patch
           "torch_kernel": f"with the correctly rounded {p.spec.get('function')} in torch the origin's error"}.get(
        p.spec.get("op"), "with the patch the origin's local error")        # torch's kernel counterfactual: no patch
    return f"{p.why}; verified: {how} falls from {before.text()} to {t.after.max_abs:.3g}{unit}"


def _ev(p: Patch, t: Trial, loc: Localisation, untried: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The verification's evidence; ``untried``: how many patches were tried and what the budget left
    untried (patch_budget.py), so a verified cause also says what was not looked at."""
    return clean({"patch": p.spec, **(untried or {}), "local_before": loc.ort.max_abs, "local_after": t.after.max_abs,
                  "nonfinite_before": loc.ort.nonfinite or None,
                  "reference_evaluator_max_abs": loc.reference.max_abs if loc.reference else None,
                  "localisation": loc.note, "first_divergent_node": loc.first_node,
                  "whole_file": _whole_file(t),
                  **(loc.fx.evidence() if loc.fx is not None else {})})


def cut_out_only(trials: list[Trial]) -> str:
    """Said of the patches that removed the drift in the cut-out origin but not in the whole patched file (holds.py):
    not verified, and why."""
    only = [t for t in trials if t.after.fails and any(f["fails"] for f in t.in_file)]
    if not only:
        return ""
    where = next(f for f in only[0].in_file if f["fails"])
    what = ", ".join(dict.fromkeys(str(t.patch.spec.get("rewrite") or t.patch.spec.get("op")) for t in only))
    return (f"; {len(only)} patch(es) ({what}) removed the drift in the cut-out origin but not in the whole patched "
            f"file at ONNX Runtime level {where['level']!r} (local error {where['local_after']:.3g} there): not "
            f"verified")


def _whole_file(t: Trial) -> Optional[dict[str, Any]]:
    """The patch measured in the whole patched file (holds.py): the levels and the origin's largest error there."""
    runs = t.in_file
    if not runs:
        return None
    return {"levels": list(dict.fromkeys(f["level"] for f in runs)), "samples": len({f["sample"] for f in runs}),
            "local_after": max(f["local_after"] for f in runs)}


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
           f"patch among {len(trials)} tried removed it{left}; {loc.note or 'the reference evaluator could not tell'}"
           + cut_out_only(trials))
    ev = {"localisation": loc.note, "first_divergent_node": loc.first_node, "ops": ops[:20],
          "tried": [t.patch.spec for t in trials][:20], "skipped": skipped or None,
          "skipped_exports": skipped_exports or None,
          "reference_evaluator_max_abs": loc.reference.max_abs if loc.reference else None}
    fix = ("report the op to ONNX Runtime with `drifttui repro`" if loc.kind == "runtime" else
           "run `drifttui repro` and compare the nodes with the torch forward by hand")
    nodes = [loc.first_node] if loc.first_node else _computing(case)
    wrong = loc.fx.wrong if loc.fx is not None else None
    if wrong is not None and loc.kind != "runtime":
        check = lowering_class(wrong.target, wrong.op_types)
        nodes = list(wrong.nodes)
        msg = (f"{display_name(case.module)} drifts on its own: {describe(loc.fx, case.module)}; no patch among "
               f"{len(trials)} tried removed it{left}" + cut_out_only(trials))
        fix = (f"the exporter's lowering of torch's {wrong.target} computes otherwise than torch: write that call in a "
               f"form the exporter lowers right, or report it to torch.onnx with `drifttui repro` (the case names "
               f"the nodes)")
        ev.update(clean(loc.fx.evidence()))
    elif loc.torch_op is not None and check == "lowering":     # a TorchScript file: the op aligned by value
        check = lowering_class(loc.torch_op.aten or loc.torch_op.target, loc.torch_op.op_types)
        fix = (f"the exporter's lowering of torch's {loc.torch_op.target} computes otherwise than torch: write that "
               f"call in a form the exporter lowers right, or report it to torch.onnx with `drifttui repro`")
    if check in ATTRIBUTE_CLASSES and nan_fed(case, nodes[-1] if nodes else None):
        check = "op-compat"
        msg += f"; {nodes[-1]} is fed NaN: the ONNX op treats NaN otherwise than torch (torch propagates it)"
    known = explain_no_patch(case)
    if known is not None:
        check, msg, fix, nodes = known
        ev["no_patch"] = True
    return Finding(check, "error", case.module, nodes, msg, clean(ev), fix, verified=False, patch=None,
                   local_before=loc.ort.max_abs, kind=loc.kind)


def rank(findings: list[Finding], origin: Optional[str]) -> list[Finding]:
    """Verified first, then by severity, then those at the origin, then unverified before refuted."""
    return sorted(findings, key=lambda f: (f.verified is not True, SEVERITY_ORDER.get(f.severity, 3), f.module != origin,
                                           f.verified is False))


__all__ = ["Trial", "headline_order", "merge", "rank"]
