"""Step 3: the origin's ONNX node(s): ops, attributes, shapes, initializers next to the torch
parameters, known-hazard ops flagged, and the same graph at every ORT optimisation level."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import INT_ELEMS
from drifttui.core.result import NodeInfo, Step, display_name, own_op_types
from drifttui.core.explain.context import Context, clean
from drifttui.core.explain.findings import findings
from drifttui.core.explain.steps.ort_pass import evidence as pass_evidence, offline_pass, ort_pass
from drifttui.core.explain.sweep import opt_sweep
from drifttui.core.onnx.graph import GraphIndex, elem_type_name
from drifttui.core.onnx.intdiv import truncation_is_floor
from drifttui.core.runtime.passes import settings

TITLE = "The origin's ONNX node"



def hazard(node: NodeInfo, elem_types: dict[str, int], opset: Optional[int] = None,
           index: Optional[GraphIndex] = None) -> Optional[str]:
    """Why this op is a known source of silent drift, or None (``opset``: the file's default-domain
    opset; a Resize before 11 has no coordinate_transformation_mode to quote; ``index``: the file's graph, which
    tells an integer Div whose truncation cannot differ from torch's floor)."""
    a = node.attributes
    op = node.op_type
    if op in ("Resize", "Upsample") and (op == "Upsample" or (opset is not None and opset < 11)):
        return (f"opset-{opset if opset is not None else '?'} {op} mode={a.get('mode', 'nearest')}: always asymmetric "
                "(no coordinate_transformation_mode before opset 11), torch's align_corners=False samples "
                "half-pixel: re-export at opset >= 11")
    if op == "Resize":
        return (f"Resize mode={a.get('mode', 'nearest')} coordinate_transformation_mode="
                f"{a.get('coordinate_transformation_mode', 'half_pixel')} nearest_mode={a.get('nearest_mode', '-')} "
                f"antialias={a.get('antialias', 0)}: must match the torch interpolate call")
    if op in ("LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
              "RMSNormalization", "SkipLayerNormalization"):
        return f"{op} epsilon={a.get('epsilon', 1e-5):.3g}: must equal the torch module's eps"
    if op == "Pad":
        return f"Pad mode={a.get('mode', 'constant')}: reflect/replicate/circular must match padding_mode"
    if op == "AveragePool":
        return (f"AveragePool count_include_pad={a.get('count_include_pad', 0)} ceil_mode={a.get('ceil_mode', 0)}: "
                "torch defaults count_include_pad=True")
    if op == "MaxPool" and a.get("ceil_mode", 0):
        return "MaxPool ceil_mode=1: output size rounding"
    if op == "Cast":
        return f"Cast to {elem_type_name(int(a.get('to', 0)))}: an implicit precision change"
    if op == "Div" and any(elem_types.get(v) in INT_ELEMS for v in node.inputs):
        return None if _floor_safe(node, index) else "Div on integers truncates towards zero (torch floor_divide floors)"
    if op in ("Gelu", "Erf") or op == "Tanh" and "gelu" in node.name.lower():
        return f"{op}: exact versus tanh-approximated GELU"
    if op in ("ReduceMean", "ReduceSum", "Softmax", "LogSoftmax") and node.domain in ("", "ai.onnx"):
        return None
    if op in ("GridSample", "RoiAlign", "Einsum", "ScatterND", "ScatterElements", "Mod", "Round"):
        return f"{op}: semantics differ between frameworks for some attributes"
    return None


def _floor_safe(node: NodeInfo, index: Optional[GraphIndex]) -> bool:
    """This integer Div's truncation equals torch's floor (operands never negative, or the file corrects it)."""
    ni = index.producer.get(node.outputs[0]) if index is not None and node.outputs else None
    return ni is not None and truncation_is_floor(index, index.nodes[ni]) is not None


def _torch_stats(ctx: Context, names: list[str]) -> list[dict[str, Any]]:
    if not hasattr(ctx.model, "named_parameters"):
        return []
    tensors = dict(ctx.model.named_parameters())
    tensors.update(dict(ctx.model.named_buffers()))
    out = []
    for n in names:
        t = tensors.get(n)
        if t is None or not t.is_floating_point() or t.numel() == 0:
            continue
        a = t.detach().float().cpu().numpy().astype(np.float64)
        out.append({"name": n, "dtype": str(t.dtype).replace("torch.", ""), "dims": list(t.shape),
                    "min": a.min(), "max": a.max(), "mean": a.mean(), "std": a.std()})
    return out


def run(ctx: Context) -> Step:
    L = ctx.origin_layer
    ctx.say("step 3: rerunning at every ORT optimisation level")
    sweep = opt_sweep(ctx)
    sweep_ev = {"final_verdict_changes_at": sweep["final_verdict_changes_at"],
                "origin_error_changes_at": sweep["origin_error_changes_at"],
                "fused_op_types": sweep["fused_op_types"], "samples": sweep["samples"],
                "levels": {lv: {k: v for k, v in r.items() if k in ("final_max_abs", "final_fails", "origin_max_abs",
                                                                  "origin_fails", "nodes")}
                           for lv, r in sweep["levels"].items()}}
    passes = ort_pass(ctx) if sweep["final_verdict_changes_at"] or sweep["origin_error_changes_at"] else None
    if passes is None and ctx.cfg.reference_onnx and ctx.result.verdict != "ok":
        passes = offline_pass(ctx)       # a file saved by ORT's offline optimizer: re-optimise the reference
    if passes is not None:
        sweep_ev["ort_pass"] = pass_evidence(passes)
    level_note = ""
    if sweep["final_verdict_changes_at"]:
        level_note = f"; the final outputs change verdict at level(s) {', '.join(sweep['final_verdict_changes_at'])}"
    if L is None:
        verdict = "fail" if sweep["final_verdict_changes_at"] else "skipped"
        summary = "no drift origin to inspect" + level_note + (f"; {passes.summary}" if passes is not None else "")
        return Step(3, TITLE, verdict, summary, clean({"opt_levels": sweep_ev}),
                    _pass_fix(passes) or ("see the fusion finding" if level_note else ""))
    evidence, hazards, related = _origin_evidence(ctx, L)
    evidence["opt_levels"] = sweep_ev
    step = _verdict(L, sweep, level_note, clean(evidence), hazards, related, passes)
    if passes is not None and passes.summary not in step.summary:    # the finding's branch: the pass too
        step = dataclasses.replace(step, summary=f"{step.summary}; {passes.summary}",
                                   suggestion="; ".join(x for x in (step.suggestion, _pass_fix(passes)) if x))
    return step


def _origin_evidence(ctx: Context, L: Any) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any]]:
    """The origin's nodes (attributes, shapes, hazards), initializers, torch parameters, and the
    checks' findings on this module or these nodes."""
    elem_types = ctx.index.elem_types
    nodes, hazards = [], []
    for nd in L.nodes:
        h = hazard(nd, elem_types, ctx.index.opset, ctx.index)
        nodes.append({"name": nd.name, "op_type": nd.op_type, "domain": nd.domain, "attributes": nd.attributes,
                      "inputs": [{"name": v, "shape": nd.shapes.get(v)} for v in nd.inputs],
                      "outputs": [{"name": v, "shape": nd.shapes.get(v)} for v in nd.outputs],
                      "hazard": h})
        if h:
            hazards.append({"node": nd.name, "op_type": nd.op_type, "why": h})
    inits = [{"name": i.name, "dtype": i.dtype, "dims": i.dims, "min": i.min, "max": i.max, "mean": i.mean,
              "std": i.std, "torch_param": i.torch_param, "max_abs_diff_vs_torch": i.torch_max_abs_diff}
             for i in L.initializers]
    torch_params = _torch_stats(ctx, [p.name for p in L.params])
    node_names = set(L.onnx_nodes)
    related = [f for f in findings(ctx).findings
               if f.severity in ("error", "warning") and (f.module == L.module or node_names & set(f.onnx_nodes))]
    evidence = {"module": L.module, "class": L.cls, "op_types": L.op_types, "nodes": nodes[:16],
                "initializers": inits[:16], "torch_params": torch_params[:16], "hazards": hazards,
                "findings": [{"check": f.check, "severity": f.severity, "message": f.message, "verified": f.verified}
                             for f in related]}
    return evidence, hazards, related


def _pass_fix(passes: Any) -> str:
    """The settings that avoid the pass, in one line: the level that agrees, the pass disabled, Triton's form."""
    if passes is None or not passes.settings:
        return ""
    return settings.sentence(passes.safe_level, passes.level, passes.culprits if passes.verified else [])


def _verdict(L: Any, sweep: dict[str, Any], level_note: str, evidence: dict[str, Any],
             hazards: list[dict[str, Any]], related: list[Any], passes: Any = None) -> Step:
    """One verdict ladder: a finding at the origin > level dependence > other findings > hazards >
    inconclusive (the origin drifts by definition: never "pass: no hazard")."""
    ops = ", ".join(own_op_types(L, L.op_types)) or "no ops"
    name = display_name(L.module)
    if related and related[0].severity == "error":
        f = related[0]
        proof = {True: "" if "verified: " in f.message       # the finding's message says it already
                 else f" [verified: the patch brings its local error from {f.local_before:.3g} to "
                      f"{f.local_after:.3g}]" if f.local_before is not None and f.local_after is not None
                 else " [verified]",
                 False: " [unverified: the proposed patch did not remove the drift]",
                 None: " [unverified]"}[f.verified]
        return Step(3, TITLE, "fail", f"{name} ({ops}): {f.message}{proof}" + level_note, evidence,
                    f.fix, [L.index])
    if sweep["final_verdict_changes_at"] or sweep["origin_error_changes_at"]:
        return Step(3, TITLE, "fail",
                    f"{name} ({ops}): its error changes with the ORT optimisation level "
                    f"({', '.join(sweep['origin_error_changes_at'] or sweep['final_verdict_changes_at'])})"
                    f"{level_note}; fused ops: {', '.join(sweep['fused_op_types']) or 'none'}"
                    + (f"; {passes.summary}" if passes is not None else ""),
                    evidence, _pass_fix(passes) or "deploy at the level that agrees, or report the fusion upstream",
                    [L.index])
    if related:
        f = related[0]
        return Step(3, TITLE, "inconclusive", f"{name} ({ops}): {f.message}" + level_note, evidence,
                    f.fix, [L.index])
    if hazards:
        return Step(3, TITLE, "inconclusive",
                    f"{name} ({ops}) uses hazard op(s): " + "; ".join(h["why"] for h in hazards[:3]),
                    evidence, "compare these attributes with the torch call by hand", [L.index])
    return Step(3, TITLE, "inconclusive",
                f"{name} ({ops}) drifts on its own nodes, but no check names a cause and no patch removed it; "
                "the error does not depend on the ORT optimisation level", evidence,
                "run `drifttui repro` to get the origin's nodes as an ONNX test case and compare them with the "
                "torch forward", [L.index])
