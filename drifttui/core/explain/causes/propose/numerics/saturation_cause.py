"""An over-budget int8 file whose loss is the CPU's u8s8 kernel saturating: the finding and its verified fix.

When an int8 file is over its budget, every MatMulInteger / ConvInteger is recomputed exactly from
the file's integers (saturation.py) on the checked samples.  A node whose ORT product differs from the
exact one is saturating on this processor (runtime/cpu.py names the feature it lacks: VNNI).  The fix
is the user's: ``reduce_range=True`` when quantizing (7-bit weights: no pair sum can saturate), verified
like any patch: the file's u8s8 weights re-quantized to 7 bits on a copy (prepare/reduce_range.py),
the copy checked end to end.  The other forms (keep the nodes in float32, per_channel with
reduce_range, a VNNI CPU) are printed with it.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.capture.shares import torch_tensors
from drifttui.core.explain.causes.locate import saturation
from drifttui.core.explain.causes.locate import saturation_qdq
from drifttui.core.explain.causes.locate.saturation import NodeProduct
from drifttui.core.explain.causes.locate.saturation_qdq import UNIT_OUT, unit_model
from drifttui.core.onnx.edit.keep.converter_forms import converter_forms, original_names
from drifttui.core.onnx.edit.keep.float32 import without_views
from drifttui.core.onnx.edit.keep.reduce_range import reduce_range
from drifttui.core.result import Finding, display_name
from drifttui.core.runtime import sessions
from drifttui.core.runtime.cpu import detect

MISSING = "AVX-512 VNNI or AVX-VNNI"
KEY = "causes:saturation"


def products(ctx: Any) -> list[NodeProduct]:
    """The file's integer products recomputed on up to 3 samples (cached on the context)."""
    if KEY not in ctx.cache:
        sess: dict[str, Any] = {}

        def run(names: list[str], i: int) -> dict[str, Any]:
            if "s" not in sess:
                sess["s"] = ctx.ort_session(ctx.cfg.opt_level, extra=tuple(names))
            return sessions.run(sess["s"], ctx.feeds(ctx.sample(i)), names)

        def run_unit(unit: Any, x: Any) -> Any:
            # a QDQ unit alone at the deployment's level: ORT fuses it (QLinearConv) only above "disable"
            if unit.node not in sess:
                sess[unit.node] = sessions.make_session(unit_model(ctx.index, unit, list(x.shape)),
                                                        ctx.cfg.output_opt_level, ctx.cfg.deterministic,
                                                        ctx.cfg.provider, ctx.workdir, "unit.onnx", prepack=False)
            return sessions.run(sess[unit.node], {unit.x_f: x}, [UNIT_OUT])[UNIT_OUT]

        ctx.say("causes: recomputing the file's integer products exactly (numpy int64)")
        ctx.cache[KEY] = measure(ctx.index, run, ctx.n_samples(3), run_unit)
    return ctx.cache[KEY]


def measure(index: Any, run: Callable[[list[str], int], dict[str, np.ndarray]], samples: int,
            run_unit: Callable[[Any, np.ndarray], np.ndarray]) -> list[NodeProduct]:
    """Every integer product of the file recomputed on ``samples`` samples: MatMulInteger /
    ConvInteger (``run(names, i)``: ORT's values of ``names`` on sample i, marked) and the QDQ units
    (``run_unit(unit, x)``: the unit alone, fused at the deployment's level).  A QOperator file's
    QLinear* ops are not recomputed (yet)."""
    nodes = saturation.int32_nodes(index)
    units = saturation_qdq.qdq_products(index)
    if not nodes and not units:
        return []
    names = saturation.values_needed(index, nodes)
    names += [v for v in saturation_qdq.values_needed(units) if v not in names]
    runs = [run(names, i) for i in range(samples)]
    return saturation.recompute(index, nodes, runs) + saturation_qdq.recompute(index, units, runs, run_unit)


def saturation_finding(ctx: Any) -> Optional[Finding]:
    """The finding for an over-budget int8 file whose integer products saturate here; None: not that case."""
    result = ctx.result
    if result.precision is None or result.precision.verdict != "over budget" or "int8" not in result.precision.format:
        return None
    bad = sorted((p for p in products(ctx) if p.saturated), key=lambda p: -p.rel)
    if not bad:
        return None
    cpu = detect()
    worst = bad[0]
    bad = _origin_first(ctx, bad)
    module = _module_of(ctx, bad[0].node)
    verified, after = _verify(ctx)
    names = original_names(ctx.index, {p.node for p in bad})
    forms = converter_forms(ctx.index, {p.node for p in bad}, result.precision.format)
    how = ("; ORT's output equals the 16-bit saturating pair sums exactly (VPMADDUBSW)"
           if all(p.emulated for p in bad) else "")
    message = (f"{display_name(module)}: ONNX Runtime's int8 product is not exact on this CPU "
               f"({cpu.summary()}): {_counts(bad)} differ from the product recomputed exactly from the "
               f"file's integers (worst {worst.name}: max |d| {worst.max_diff} {_units(worst)}, {worst.rel:.1%} "
               f"of its scale){how}: the u8s8 kernel saturates without {MISSING}")
    check = ("" if verified is None else
             f" (verified: the file's weights re-quantized to 7 bits on a copy, checked end to end: {after})"
             if verified else f" (tried: the file's weights re-quantized to 7 bits on a copy: still {after})")
    fix = (f"quantize with reduce_range=True (quantize_dynamic(..., reduce_range=True) or "
           f"quantize_static(..., reduce_range=True): 7-bit weights cannot saturate){check}; or keep those "
           "nodes in float32 (" + "; ".join(f"{t}: {a}" for t, a in forms.items())
           + f"); or deploy on a CPU with {MISSING}, where this file's products are exact")
    evidence = {"cpu": cpu.summary(), "int8 kernel": cpu.kernel(), "missing feature": MISSING,
                "saturating nodes": [_row(p) for p in bad],
                "exact nodes": [p.name for p in products(ctx) if not p.saturated],
                "reduce_range copy": after, "keep in float32": names, "converter arguments": forms}
    return Finding("precision", "error", module, [p.name for p in bad][:8], message, evidence, fix,
                   verified=verified, kind="saturation")


def _origin_first(ctx: Any, bad: list[NodeProduct]) -> list[NodeProduct]:
    """The saturating products in the order the finding names them: the origin's own first (the module over its
    budget is where the drift starts, however much a later product saturates), else the file's first (upstream:
    never a consumer fed values an earlier saturation made wrong), the rest by how far they are off."""
    origin = ctx.result.precision_origin or ctx.result.drift_origin
    own = [p for p in bad if origin is not None and _module_of(ctx, p.node) == origin.module]
    lead = own[:1] or [min(bad, key=lambda p: p.node)]
    return lead + [p for p in bad if p is not lead[0]]


def _counts(bad: list[NodeProduct]) -> str:
    parts = [f"{p.wrong} of {p.elements} int32 outputs of {p.op} {p.name}" if p.unit == "int32" else
             f"{p.wrong} of {p.elements} requantized outputs of {p.op} {p.name} (off by 2 steps or more)"
             for p in bad[:3]]
    return "; ".join(parts) + (f" and {len(bad) - 3} more node(s)" if len(bad) > 3 else "")


def _units(p: NodeProduct) -> str:
    return "in int32 units" if p.unit == "int32" else "output steps"


def _row(p: NodeProduct) -> dict[str, Any]:
    return {"node": p.name, "op": p.op, "outputs": p.elements, "not exact": p.wrong, "max |d|": p.max_diff,
            "max |exact|": p.max_exact, "compared": p.unit, "relative": p.rel, "16-bit pair sums reproduce ORT": p.emulated}


def _module_of(ctx: Any, node: int) -> Optional[str]:
    budgets = (ctx.prepared.budgets or ({}, 0.0))[0]
    for call, b in budgets.items():
        if node in b.node_ids and call < len(ctx.result.layers):
            return ctx.result.layers[call].module
    return ctx.node_module(node)


def _verify(ctx: Any) -> tuple[Optional[bool], str]:
    """(within budget?, the copy's verdict) for the file re-quantized with reduce_range; None: not run."""
    key = KEY + ":verify"
    if key not in ctx.cache:
        patched, changed = reduce_range(ctx.prepared.proto, ctx.prepared.index, None, torch_tensors(ctx.model))
        if not changed:
            ctx.cache[key] = (None, "")
        else:
            ctx.say("causes: checking a copy with 7-bit weights (reduce_range) end to end")
            try:
                after = ctx.recheck(without_views(patched))
            except ValueError:       # no engine to check a copy with
                ctx.cache[key] = (None, "")
                return ctx.cache[key]
            worst = max((o.metrics.max_abs.worst for o in after.outputs), default=None)
            verdict = after.precision.verdict if after.precision is not None else after.verdict
            ctx.cache[key] = (after.verdict == "ok", verdict + ("" if worst is None else f", output max |d| {worst:.3g}"))
    return ctx.cache[key]
