"""``drifttui repair``: the verified ONNX-level patches applied to a copy of the whole graph,
then the whole model checked again, end to end (``Pipeline.recheck``).

Only patches that verified on the origin's own nodes are applied (``Finding.verified``): a
graph edit is applied to the copy, and to the node that stands where it stands in each other call of the
origin's class (``Patch.siblings``: the same lowering is wrong in every layer); a verified re-export of the origin
module is grafted into it (``graft.py``: the origin's nodes replaced by the re-export's graph), and so are the
siblings' re-exports.  A graft reads the file's values of the call's inputs; where a graph optimiser fused one away
(ORT's FusedMatMul alpha took the parent's scale) it reads the value the file holds before the fusion, and the scale
is recomputed (propose/reexport/held_inputs.py); a re-export verified far above its origin (a unit's, the root) is grafted
cut where the file holds the origin's input (propose/reexport/narrow_graft.py; the applied spec says ``cut_at``), the file's
nodes upstream kept.  The user's file is never touched: the CLI writes the copy through
``report/outputs.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from drifttui.core.explain.causes.verify import Explanation
from drifttui.core.onnx.edit.graft.splice import GraftError, graft
from drifttui.core.onnx.edit.keep.float32 import without_views
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply


@dataclass
class Repair:
    model: Optional[Any]                      # the patched full model, None when nothing applied
    applied: list[dict[str, Any]] = field(default_factory=list)
    not_applicable: list[dict[str, Any]] = field(default_factory=list)   # verified, but not a graph edit
    local_before: Optional[float] = None
    local_after: Optional[float] = None


def repair(full_model: Any, exp: Explanation) -> Repair:
    specs = [f.patch for f in exp.findings if f.verified and f.patch]
    trials = {repr(sorted(t.patch.spec.items(), key=str)): t for t in exp.verified}
    out = Repair(None)
    model = full_model
    for spec in specs:
        t = trials.get(repr(sorted(spec.items(), key=str)))
        patch: Patch = t.patch if t is not None else Patch(dict(spec), "", "", "")
        if not patch.applicable:
            out.not_applicable.append(spec)
            continue
        if patch.graph_level:
            model = _apply_siblings(apply(model, patch), patch)
        else:
            try:
                model, cut = _graft_narrow_first(model, patch.graft)
            except GraftError as exc:
                out.not_applicable.append({**spec, "why": str(exc)})
                continue
            model = _siblings(model, patch.graft)
            spec = {**spec, "cut_at": cut} if cut else spec
        out.applied.append(spec)
        if t is not None:
            out.local_after = t.after.max_abs if out.local_after is None else max(out.local_after, t.after.max_abs)
    if out.applied:
        out.model = without_views(model)     # the file for the user: drifttui's round trips undone
    out.local_before = exp.loc.ort.max_abs if exp.loc is not None else None
    return out


def _graft_narrow_first(model: Any, g: Any) -> tuple[Any, str]:
    """(``model`` with ``g`` grafted, the file's value it was cut at or ""): cut where the file holds the origin's
    input when it can be (``g.narrow``, propose/reexport/narrow_graft.py: the file's nodes upstream kept), else whole."""
    if g.narrow is not None:
        try:
            return graft(model, g.narrow), g.narrow.inputs[0]
        except GraftError:
            pass
    return graft(model, g), ""


def _apply_siblings(model: Any, patch: Patch) -> Any:
    """``model`` with the same graph edit at the origin class's other calls (propose/siblings.py), each one
    that fits."""
    for sib in patch.siblings:
        try:
            model = apply(model, sib)
        except PatchError:
            continue
    return model


def _siblings(model: Any, g: Any) -> Any:
    """``model`` with the origin class's other calls grafted too (propose/siblings.py), each one that grafts."""
    for sib in getattr(g, "siblings", []):
        try:
            model = graft(model, sib)
        except GraftError:
            continue
    return model


@dataclass(frozen=True)
class Repaired:
    """What ``Pipeline.repair`` made of a result: the way it repaired (``"patches"``, the verified
    graph edits; ``"keep_list"``, a reduced-precision file's layers kept in float32; ``"reduce_range"``:
    an int8 file re-quantized with 7-bit weights where the CPU's kernel saturates; ``"none"``:
    nothing could be repaired, ``reason`` says why; ``"nothing"``: no drift to repair), the copy to
    write (``model``, views undone; None when nothing is written), its check end to end (``after``)."""

    kind: str
    result: Any                                   # the result repaired (explained when patches were tried)
    model: Optional[Any] = None
    after: Optional[Any] = None
    patches: Optional[Repair] = None              # kind "patches": applied, not applicable, local error
    keep: Optional[Any] = None                    # kind "keep_list" (or a genuine drift found by it): KeepList
    reason: str = ""
    fix: str = ""                                 # the head finding's fix ("none"), or the saturation finding
    source_fixes: list = field(default_factory=list)   # kind "patches": (code, words) to change at the source


def repair_patches(full: Any, result: Any, exp: Explanation) -> tuple[Repair, str, str]:
    """The verified patches applied to ``full``; with no model, (the repair, why nothing applied, the fix)."""
    fixed = repair(full, exp)
    if fixed.model is not None:
        return fixed, "", ""
    head = exp.findings[0] if exp.findings else None
    why = next((p["why"] for p in fixed.not_applicable if p.get("why")), "")
    what = (f"a verified re-export that cannot be grafted ({why})" if why else
            _not_an_edit(fixed.not_applicable) if fixed.not_applicable else "no verified ONNX-level patch")
    if exp.case is None:
        what = f"no test case of the origin ({exp.no_case})"
    return fixed, what, (head.fix if head is not None and head.fix else "")


def _not_an_edit(specs: list[dict[str, Any]]) -> str:
    """What a verified cause that ``repair`` cannot write is, in the words of what verified it."""
    ops = {s.get("op") for s in specs}
    if "reexport" in ops:
        return "a verified re-export that cannot be grafted"
    if "float64" in ops:
        return "only a float64 counterfactual verified (not a graph edit)"
    return "only a cause in the model verified (" + ", ".join(sorted(str(o) for o in ops)) + ", not a graph edit)"
