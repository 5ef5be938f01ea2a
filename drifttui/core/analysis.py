"""The verdict: statuses per module call, the drift origin, coverage.

A mapped call whose output passes the tolerance is ``ok``.  One that fails is ``drift``
when its *own* (local) error fails too, and ``inherited`` when its own nodes, fed with the
PyTorch-side inputs, agree with PyTorch.  The origin is the drifting call whose failing
value is computed first in the graph's execution order.  Local errors are attributed to
the deepest call that owns a value, so a container is never the origin when a child
explains the drift; a container is the origin only when its own ops (between its
children) drift.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from drifttui.core.capture_torch import Call
from drifttui.core.mapping import Plan
from drifttui.core.metrics import Aggregate
from drifttui.core.result import (DRIFT, FUSED, INHERITED, NOT_EXPORTED, OK, UNATTRIBUTED, UNMAPPED, Coverage,
                                  InitializerInfo, Layer, NodeInfo, Origin, ParamInfo)


@dataclass
class Verdict:
    statuses: list[str]
    origin: Optional[int]
    notes: list[str] = field(default_factory=list)


def decide(calls: list[Call], plan: Plan, glob: dict[int, Aggregate], local: dict[int, Aggregate],
           local_first: dict[int, int], local_available: bool,
           op_types: Optional[dict[int, list[str]]] = None) -> Verdict:
    statuses: list[str] = []
    for cm in plan.calls:
        if cm.status != OK:
            statuses.append(cm.status)
            continue
        agg = glob.get(cm.call)
        if agg is None or agg.samples == 0:
            statuses.append(UNMAPPED)
            continue
        if not agg.fails():
            statuses.append(OK)
            continue
        own = local.get(cm.call)
        if own is not None and own.samples:
            statuses.append(DRIFT if own.fails() else INHERITED)
        elif local_available:
            statuses.append(INHERITED)   # no own computation: its output is a child's or an input
        else:
            statuses.append(DRIFT)       # refined below: only the first failing leaf-most call
    notes: list[str] = []
    drifting = [i for i, s in enumerate(statuses) if s == DRIFT]
    if not local_available and drifting:
        # without local errors: the earliest-finishing failing call is the origin, the rest inherit
        first = min(drifting, key=lambda i: calls[i].end_order)
        for i in drifting:
            if i != first:
                statuses[i] = INHERITED
        drifting = [first]
        notes.append("local errors were not computed; the origin is the first module to finish with a "
                     "failing output, which can be an amplifier rather than the cause")
    origin = None
    if drifting:
        origin = min(drifting, key=lambda i: (local_first.get(i, 10**9), calls[i].end_order, -calls[i].depth))
    notes.extend(attribute_unowned(calls, plan, statuses, origin, op_types))
    return Verdict(statuses, origin, notes)


_LOW = ("float16", "bfloat16")
_REDUCTIONS = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp",
               "Softmax", "LogSoftmax", "MatMul", "Gemm", "Conv", "LayerNormalization",
               "BatchNormalization", "InstanceNormalization", "GroupNormalization", "Einsum", "CumSum"}


def attribute_unowned(calls: list[Call], plan: Plan, statuses: list[str], origin: Optional[int],
                      op_types: Optional[dict[int, list[str]]] = None) -> list[str]:
    """Layers that fail with no module owning the error become ``unattributed``, with a note.

    With no origin, an ``inherited`` layer inherits from nothing: its own nodes, fed with the
    PyTorch-side inputs, agree, and no earlier module fails.  The note says why that happens:
    float32 noise upstream flipping roundings at a precision cast (a float16/bfloat16 value
    downstream of a float32 one), or an ill-conditioned reduction amplifying rounding noise.
    Mutates ``statuses``; returns the notes.  The one place this is decided.
    """
    if origin is not None:
        return []
    unowned = [i for i, s in enumerate(statuses) if s == INHERITED]
    if not unowned:
        return []
    cast_at = next((c.index for c in calls if _casts(calls, c)), None)
    for i in unowned:
        statuses[i] = UNATTRIBUTED
    names = ", ".join(calls[i].module or "<root>" for i in unowned[:5])
    more = f" and {len(unowned) - 5} more" if len(unowned) > 5 else ""
    if cast_at is not None:
        why = (f"upstream float32 rounding noise is amplified at a precision cast (at "
               f"{calls[cast_at].module or '<root>'}: {_casts(calls, calls[cast_at])}), which flips low-precision roundings")
    elif any(op in _REDUCTIONS for i in unowned for op in (op_types or {}).get(i, [])):
        why = "rounding noise is amplified by a reduction (a long sum, softmax or normalisation) in them"
    else:
        why = "rounding noise accumulated upstream, below every module's own tolerance"
    for i in unowned:
        cm = plan.calls[i]
        extra = "fails the tolerance, but no module owns the error (its own nodes agree, no earlier module fails)"
        if extra not in cm.note:
            cm.note = f"{cm.note}; {extra}" if cm.note else extra
    return [f"{len(unowned)} layer(s) fail the tolerance with no module owning the error: {names}{more}. "
            f"Their own nodes, fed with the PyTorch-side inputs, agree; {why}. They are 'unattributed', not drift: "
            "widen the tolerance for low-precision layers, or compute the block in float32, if the size matters"]


def _casts(calls: list[Call], c: Call) -> str:
    """'float32 -> float16' when floating precision changes inside the call, or between the call
    that produced one of its inputs and the call itself (a functional ``.half()`` between them)."""
    def fl(dt: str) -> bool:
        return dt.startswith(("float", "bfloat"))
    ins = {r.dtype for r in c.inputs if fl(r.dtype)}
    outs = {r.dtype for r in c.outputs if fl(r.dtype)}
    if ins and outs and ins != outs and (ins | outs) & set(_LOW):
        return f"{'/'.join(sorted(ins))} -> {'/'.join(sorted(outs))}"
    for r in c.inputs:
        if r.producer is None or not fl(r.dtype):
            continue
        ci, pos = r.producer
        src = calls[ci].outputs[pos].dtype if pos < len(calls[ci].outputs) else r.dtype
        if fl(src) and src != r.dtype and {src, r.dtype} & set(_LOW):
            return f"{src} -> {r.dtype}"
    root = calls[0]
    wide = {r.dtype for r in root.inputs + root.outputs} - set(_LOW)
    low = sorted({r.dtype for r in c.inputs + c.outputs} & set(_LOW))
    if c.parent is not None and low and any(fl(d) for d in wide):
        # a functional cast (``x.half()``) between calls leaves no producer link: the model is
        # float32 at its boundary and this call computes in low precision
        return f"{'/'.join(sorted(d for d in wide if fl(d)))} model, {'/'.join(low)} inside"
    return ""

def coverage(statuses: list[str], plan: Plan) -> Coverage:
    mapped = sum(1 for s in statuses if s in (OK, DRIFT, INHERITED, UNATTRIBUTED))
    return Coverage(
        modules=len(statuses), mapped=mapped,
        fused=statuses.count(FUSED), not_exported=statuses.count(NOT_EXPORTED),
        unmapped=statuses.count(UNMAPPED), localized=plan.localized, reason=plan.reason,
    )


def make_layers(calls: list[Call], plan: Plan, statuses: list[str], glob: dict[int, Aggregate],
                local: dict[int, Aggregate], details: dict[int, tuple[list[NodeInfo], list[InitializerInfo]]],
                op_types: dict[int, list[str]], node_names: dict[int, list[str]]) -> list[Layer]:
    layers = []
    for c, cm, st in zip(calls, plan.calls, statuses):
        g = glob.get(c.index)
        lo = local.get(c.index)
        nodes, inits = details.get(c.index, ([], []))
        layers.append(Layer(
            index=c.index, module=c.module, cls=c.cls, call=c.call, depth=c.depth, parent=c.parent,
            status=st,
            onnx_values=[cm.outputs[p] for p in sorted(cm.outputs)],
            op_types=op_types.get(c.index, []),
            onnx_nodes=node_names.get(c.index, []),
            output_shapes=[list(o.shape) for o in c.outputs],
            metrics=g.to_metrics() if g is not None and g.samples else None,
            local=lo.to_metrics() if lo is not None and lo.samples else None,
            note=cm.note,
            nodes=nodes, initializers=inits,
            params=[ParamInfo(n, k, list(s), d) for n, k, s, d in c.params],
        ))
    return layers


def make_origin(layers: list[Layer], origin: Optional[int]) -> Optional[Origin]:
    if origin is None:
        return None
    L = layers[origin]
    m = L.metrics
    return Origin(
        layer=L.index, module=L.module, cls=L.cls, call=L.call, onnx_values=L.onnx_values,
        op_types=L.op_types,
        max_abs=m.max_abs.worst if m else float("nan"),
        max_rel=m.max_rel.worst if m else float("nan"),
        local_max_abs=L.local.max_abs.worst if L.local else None,
        worst_sample=(L.local.max_abs.worst_sample if L.local else (m.max_abs.worst_sample if m else -1)),
    )
