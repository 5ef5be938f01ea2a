"""The opmath rewrite carried to the calls inside the origin: the float16 roundings ONNX Runtime drops there too.

A verified ``opmath_float32`` patch (``opmath.py``) puts back, at the origin's own nodes, the float16 / bfloat16
roundings ONNX Runtime's CPU drops (its inserted Cast pairs, microsoft/onnxruntime#8787).  The origin's case feeds
the calls inside it (a Linear a TorchScript file scopes apart) torch's outputs, so it verifies on the origin's own
nodes alone; but in the file those inner calls drop their roundings the same way (the autocast cast of the
Linear's input), each within its own float16 budget, and the origin, which cancels or cuts what they hand it,
amplifies the difference: ``repair``'s copy then drifts on a sample the case did not hold (forms41g's ``sq_dist``,
TorchScript).  So the same rewrite, ``per_op`` (each low-precision node computed in float32 and rounded at its
output by explicit Casts, as torch rounds each op), is written at each inner call's own low-precision nodes:
``Patch.siblings``, which ``repair`` applies after the origin's (one rewrite for all of them: their nodes share
inputs).  Only the origin's patch decides ``verified``; ``check`` on the repaired file says whether the whole is right.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from drifttui.core.onnx.edit.numerics.opmath import HELD, LOW
from drifttui.core.onnx.edit.patches import Patch


def _inside(ctx: Any, origin: int) -> list[int]:
    """The calls whose parent chain reaches call ``origin``, in call order."""
    out = []
    for c in ctx.calls:
        p = c.parent
        while p is not None and p != origin:
            p = ctx.calls[p].parent
        if p == origin and c.index != origin:
            out.append(c.index)
    return out


def _spec(ctx: Any, calls: list[int], like: dict[str, Any]) -> dict[str, Any] | None:
    """``like`` (the origin's per_op spec) at the own low-precision nodes of ``calls``, one rewrite (their nodes share
    inputs: the autocast cast of an attention's input read by its three projections); None when they have none."""
    types = ctx.index.elem_types
    stored = {t.name: int(t.data_type) for t in ctx.index.model.graph.initializer}
    known = {**stored, **types}
    mine = set(calls)
    nodes = [n for n in ctx.index.nodes if ctx.plan.node_call[n.index] in mine and n.name and n.op_type not in HELD
             and any(n.outputs) and all(types.get(o) in LOW for o in n.outputs if o)]
    if not nodes or len({n.name for n in nodes}) != len(nodes):
        return None
    made = {o: int(types[o]) for n in nodes for o in n.outputs if o}
    inputs = {v: int(known[v]) for n in nodes for v in n.inputs if v and v not in made and known.get(v) in LOW}
    names = [n.name for n in nodes]
    return {**like, "node": names[0], "nodes": names, "low": made, "inputs": inputs, "round": sorted(made)}


def inner_opmath_patches(ctx: Any, origin: int, patch: Patch) -> list[Patch]:
    """``patch`` (a verified per-op opmath rewrite of the origin) at the calls inside the origin holding
    low-precision nodes of their own, as one patch; none for any other patch."""
    spec = patch.spec
    if spec.get("rewrite") != "opmath_float32" or spec.get("form") != "per_op" or ctx.plan is None:
        return []
    calls = _inside(ctx, origin)
    inner = _spec(ctx, calls, spec) if calls else None
    if inner is None:
        return []
    owners = sorted({ctx.plan.node_call[n.index] for n in ctx.index.nodes if n.name in set(inner["nodes"])})
    module = ctx.calls[owners[0]].module if len(owners) == 1 else ctx.calls[origin].module
    return [dataclasses.replace(patch, spec=inner, module=module, nodes=inner["nodes"], siblings=[])]
