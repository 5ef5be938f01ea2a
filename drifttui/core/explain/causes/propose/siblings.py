"""The other calls of the origin's class, repaired the same way: a library's layer runs the same code in every
block (transformers' ``LlamaAttention`` in each decoder layer), so a lowering that is wrong in the origin is wrong
in each of them, and a file with only the origin grafted drifts at the next layer.

When the origin's re-export computes what torch computes, each other call of the same module class (at most
``MAX_SIBLINGS``, in call order) is exported alone the same way, on its own captured inputs, as it was called
(``call_structure.py``), and kept when it too computes what torch computes on that call: ``repair`` grafts
those after the origin's (``Graft.siblings``).  Only the origin decides ``verified``; the siblings make the
repaired file whole, and ``check`` on that file is what says so.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import _origin_nodes, call_io

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


def produced_value(ctx: Any, call_index: int, position: int) -> Optional[str]:
    """The file's value for input ``position`` of a call, through the call that produced that tensor (the
    hooks record it: ``TensorRef.producer``) and the plan's value for that call's output; None if unknown."""
    refs = ctx.calls[call_index].inputs
    src = refs[position].producer if position < len(refs) else None
    if src is None or ctx.plan is None or src[0] >= len(ctx.plan.calls):
        return None
    return ctx.plan.calls[src[0]].outputs.get(src[1])
