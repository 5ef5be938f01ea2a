"""A verified re-export of a call far above the origin, cut where the file holds the origin's inputs: what
``repair`` grafts instead of the whole call.

A module compared as one unit with the call that absorbed it (``prepare/unit_members.py``) is verified in the
nearest compared call holding the whole unit (``locate/case.unit_call``).  When the unit's value reaches the file
only through its consumer (ORT's extended level merges ``body``'s output Reshape into ``head``'s, and a file it
wrote keeps no scope), that call is the model's root: grafted whole, the repaired file was a new export of the
entire model, nothing of the user's file kept upstream of the drift.

So the re-export is cut at the input of the deepest call on the origin's path below the re-exported call that the
file holds (``body``'s, ``mul``): its value in the re-export is found by content (torch's value of that input, on
the case's sample, within the tolerance), the re-export's nodes after it are the graft, fed from the file's value,
and only the file's nodes between that value and the call's outputs are replaced.  The cut must separate: the
nodes kept read nothing of the re-export before it.  ``Graft.narrow`` carries it; the verification (and
``holds.py``'s fresh samples) stay on the whole re-export, ``repair`` grafts the cut one and falls back to the whole.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from onnx import helper

from drifttui.core.explain.causes.locate.case import Case, torch_values
from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.reexport.held_inputs import scale_of
from drifttui.core.onnx.edit.graft.splice import Graft
from drifttui.core.onnx.io import copy_model
from drifttui.core.runtime.torch_hooks import to_numpy


def _path(ctx: Any, case: Case) -> list[int]:
    """The calls from the origin up to (not including) the re-exported call, deepest first; [] when the origin is
    the re-exported call or not below it."""
    o = ctx.result.drift_origin
    out, p = [], (o.layer if o is not None else None)
    while p is not None and p != case.call:
        out.append(p)
        p = ctx.calls[p].parent
    return out if p == case.call else []


def narrowed(ctx: Any, case: Case, g: Graft, feeds: dict[str, np.ndarray]) -> Optional[Graft]:
    """``g`` cut at the deepest held call input on the origin's path (a Graft fed from the file's value), or None.
    ``feeds``: the re-export's graph inputs on the case's sample."""
    cuts = [(ci, pos, v) for ci in _path(ctx, case) for pos, v in sorted(ctx.plan.calls[ci].inputs.items())
            if len(ctx.calls[ci].inputs) == 1]
    if not cuts or g.baked or g.scaled:
        return None
    try:
        inner = [v for n in g.model.graph.node for v in n.output if v]
        values = run_ort(g.model, feeds, inner)
    except Exception:  # noqa: BLE001 - a re-export whose values cannot all be read: grafted whole
        return None
    for ci, pos, v in cuts:
        store = torch_values(ctx, ctx.sample(case.sample), {}, {ci: [pos]})
        t = store.inp.get((ci, pos))
        if t is None:
            continue
        want = to_numpy(t)
        for hit in [k for k in inner if scale_of(np.asarray(values[k]), want, case.atol, case.rtol) == 1.0]:
            sub = _cut(g.model, hit, np.asarray(values[hit]).dtype)
            remove = _between(ctx, v, [o for o in g.outputs if o]) if sub is not None else []
            if sub is not None and remove:
                return Graft(sub, [v], list(g.outputs), remove, root=g.root, module=g.module)
    return None


def _cut(model: Any, at: str, dtype: np.dtype) -> Optional[Any]:
    """``model``'s nodes its outputs need once ``at`` is a graph input (None unless that cut separates them from
    every other graph input)."""
    g = model.graph
    producer = {v: n for n in g.node for v in n.output if v}
    inits = {t.name for t in g.initializer}
    keep, kept_ids, stack, seen = [], set(), [o.name for o in g.output], set()
    while stack:
        v = stack.pop()
        if v in seen or v == at or v in inits:
            continue
        seen.add(v)
        n = producer.get(v)
        if n is None:
            return None         # a graph input other than the cut: it does not separate
        if id(n) not in kept_ids:
            kept_ids.add(id(n))
            keep.append(n)
            stack += [u for u in n.input if u]
    if at not in seen and not any(at in n.input for n in keep):
        return None
    out = copy_model(model)
    order = {id(n): k for k, n in enumerate(g.node)}
    nodes = [out.graph.node[order[id(n)]] for n in sorted(keep, key=lambda n: order[id(n)])]
    kept = [_copied(n) for n in nodes]      # copies: the repeated field is cleared next
    del out.graph.node[:]
    out.graph.node.extend(kept)
    used = {u for n in kept for u in n.input}
    live = [t for t in out.graph.initializer if t.name in used]
    del out.graph.initializer[:]
    out.graph.initializer.extend(live)
    del out.graph.input[:]
    out.graph.input.append(helper.make_tensor_value_info(at, helper.np_dtype_to_tensor_dtype(dtype), None))
    return out


def _copied(node: Any) -> Any:
    out = type(node)()
    out.CopyFrom(node)
    return out


def _between(ctx: Any, start: str, ends: list[str]) -> list[str]:
    """The file's nodes on a path from value ``start`` to one of ``ends`` (their names, file order)."""
    index = ctx.index
    down: set[int] = set()
    stack = [start]
    while stack:
        for k in index.consumers.get(stack.pop(), []):
            if k not in down:
                down.add(k)
                stack += [v for v in index.nodes[k].outputs if v]
    up: set[int] = set()
    stack = list(ends)
    while stack:
        k = index.producer.get(stack.pop())
        if k is not None and k in down and k not in up:
            up.add(k)
            stack += [v for v in index.nodes[k].inputs if v]
    return [index.nodes[k].name for k in sorted(up)]
