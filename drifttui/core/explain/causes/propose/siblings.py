"""The other calls of the origin's class, repaired the same way: a library's layer runs the same code in every
block (transformers' ``LlamaAttention`` in each decoder layer), so a lowering that is wrong in the origin is wrong
in each of them, and a file with only the origin grafted drifts at the next layer.

When the origin's re-export computes what torch computes, each other call of the same module class (at most
``MAX_SIBLINGS``, in call order) is exported alone the same way, on its own captured inputs, as it was called
(``call_structure.py``), and kept when it too computes what torch computes on that call: ``repair`` grafts
those after the origin's (``Graft.siblings``).  Only the origin decides ``verified``; the siblings make the
repaired file whole, and ``check`` on that file is what says so.

A verified graph edit at one node of the origin (a guard, an attribute, a rewrite: ``sibling_patches``) is moved
the same way to the node of each other call that stands where it stands: the same op, at the same place among
the call's nodes of that op, with the same attributes (the same lowering); ``repair`` applies those after the
origin's (``Patch.siblings``): an empty memory makes NaN in the Softmax of every decoder layer's attention.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import _origin_nodes, call_io
from drifttui.core.onnx.edit.patches import Patch

MAX_SIBLINGS = 32       # other calls of the origin's class re-exported per verified re-export


def sibling_calls(ctx: Any, origin_call: int) -> list[int]:
    """The other calls of the origin's module class with as many inputs and outputs, in call order."""
    mine = ctx.calls[origin_call]
    return [c.index for c in ctx.calls if c.index != origin_call and c.cls == mine.cls
            and len(c.inputs) == len(mine.inputs) and len(c.outputs) == len(mine.outputs)][:MAX_SIBLINGS]


def sibling_case(ctx: Any, case: Any, ci: int) -> Optional[Any]:
    """``case`` moved to call ``ci``: its module, its own nodes (the file's), the same sample."""

    if ctx.plan is None or ci >= len(ctx.plan.calls):
        return None
    nodes = _origin_nodes(ctx, ci)
    if not nodes:
        return None
    return dataclasses.replace(case, call=ci, module=ctx.calls[ci].module, nodes=[n.name for n in nodes])


def sibling_grafts(ctx: Any, case: Any, export: Callable[[Any, list[Any]], Any],
                   make_graft: Callable[[Any, Any, list[Any]], Any], computes: Callable[..., bool]) -> list[Any]:
    """The grafts of every sibling call whose own re-export (``export(module, inputs) -> ModelProto``)
    computes what torch computes on its call (``computes(model, inputs, outputs, case)``) and can be
    grafted (every input has a file value)."""

    out = []
    for ci in sibling_calls(ctx, case.call):
        sib = sibling_case(ctx, case, ci)
        module = ctx.modules().get(ctx.calls[ci].module) if sib is not None else None
        io = call_io(ctx, sib) if module is not None else None
        if io is None:
            continue
        ins = [t.clone() if getattr(t, "is_inference", lambda: False)() else t for t in io[0]]
        try:
            model = export(as_called(ctx, ci, module, ctx.sample(sib.sample)), ins)
        except Exception:  # noqa: BLE001 - a sibling that does not export alone stays as it is
            continue
        if model is None or not computes(model, ins, io[1], sib):
            continue
        g = make_graft(sib, model, [t.detach().cpu().numpy() for t in ins])
        if all(g.inputs):
            out.append(g)
    return out


# the edits whose spec names one node and no value of the graph (a replace_constant names the constant it reads;
# a Cast removed is left to its own call: a Cast elsewhere may be the model's own)
_MOVABLE = {"set_attribute": {"op", "node", "name", "value", "outputs"},
            "rewrite": {"op", "rewrite", "node", "value", "mode", "nodes", "ranks", "input"}}


def _movable(spec: dict) -> bool:
    keys = _MOVABLE.get(spec.get("op", ""))
    return keys is not None and set(spec) <= keys


def sibling_patches(ctx: Any, case: Any, patch: Patch) -> list[Patch]:
    """``patch`` (a graph edit of one node of the origin, ``spec["node"]``) moved to the node of each other call
    of the origin's class that stands where it stands; none when the edit names no single node."""
    name = patch.spec.get("node")
    if not _movable(patch.spec) or not isinstance(name, str) or ctx.plan is None or case.call >= len(ctx.plan.calls):
        return []
    mine = [n for n in _origin_nodes(ctx, case.call)]
    names = list(patch.spec.get("nodes") or [name])        # an edit of several nodes (accumulate_float64's sums)
    nodes = [next((n for n in mine if n.name == k), None) for k in names]
    if any(n is None for n in nodes):
        return []
    out = []
    for ci in sibling_calls(ctx, case.call):
        theirs = _origin_nodes(ctx, ci)
        moved = {k: _standing(mine, theirs, n) for k, n in zip(names, nodes)}
        if any(v is None for v in moved.values()):
            continue
        spec = {**patch.spec, "node": moved.get(name, moved[names[0]])}
        if "nodes" in spec:
            spec["nodes"] = [moved[k] for k in names]
        if "ranks" in spec:
            spec["ranks"] = {moved[k]: r for k, r in spec["ranks"].items() if k in moved}
        out.append(dataclasses.replace(patch, spec=spec, module=ctx.calls[ci].module, nodes=list(moved.values()),
                                       siblings=[]))
    return out


def _standing(mine: list[Any], theirs: list[Any], node: Any) -> Optional[str]:
    """The node of ``theirs`` that stands where ``node`` stands in ``mine``: the same op, at the same place among
    the call's nodes of that op, with the same attributes (the same lowering); None when there is none."""
    place = [n.name for n in mine if n.op_type == node.op_type].index(node.name)
    same = [n for n in theirs if n.op_type == node.op_type]
    ok = place < len(same) and list(same[place].proto.attribute) == list(node.proto.attribute)
    return same[place].name if ok else None


def produced_value(ctx: Any, call_index: int, position: int) -> Optional[str]:
    """The file's value for input ``position`` of a call, through the call that produced that tensor (the
    hooks record it: ``TensorRef.producer``) and the plan's value for that call's output; None if unknown."""
    refs = ctx.calls[call_index].inputs
    src = refs[position].producer if position < len(refs) else None
    if src is None or ctx.plan is None or src[0] >= len(ctx.plan.calls):
        return None
    return ctx.plan.calls[src[0]].outputs.get(src[1])
