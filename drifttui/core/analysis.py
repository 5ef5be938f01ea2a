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
from drifttui.core.result import (DRIFT, FUSED, INHERITED, NOT_EXPORTED, OK, UNMAPPED, Coverage,
                                  InitializerInfo, Layer, NodeInfo, Origin, ParamInfo)


@dataclass
class Verdict:
    statuses: list[str]
    origin: Optional[int]
    notes: list[str] = field(default_factory=list)


def decide(calls: list[Call], plan: Plan, glob: dict[int, Aggregate], local: dict[int, Aggregate],
           local_first: dict[int, int], local_available: bool) -> Verdict:
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
    return Verdict(statuses, origin, notes)


def coverage(statuses: list[str], plan: Plan) -> Coverage:
    mapped = sum(1 for s in statuses if s in (OK, DRIFT, INHERITED))
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
