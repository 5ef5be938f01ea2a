"""Capture windows: split a model's layers so that one pass's intermediates fit a memory budget.

Without a budget (or when everything fits) there is one window holding every call: one ORT
run per sample with every mapped value as an output, one torch forward.  With ``--max-memory``
and a model whose per-sample intermediates exceed it, the calls (in execution order, which is
the layer order) are cut into runs of consecutive layers.  Each window gets its own ORT session
(only the window's values marked as outputs; ORT frees every other intermediate as usual), its
own torch forward per sample (only the window's calls compared in the hooks), and a local graph
pruned to the nodes that compute the window's values from their cut inputs.  Every value is
compared in exactly one window, by the same code as in a single pass, so the per-layer results
are the same; the price is one torch forward and one ORT run per window per sample.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from drifttui.core.base.dtypes import ITEMSIZE


from drifttui.core.runtime.torch_hooks import Call
from drifttui.core.onnx.graph import GraphIndex
from drifttui.core.prepare.local import LocalGraph
from drifttui.core.prepare.plan.plan import Plan

_ITEMSIZE = ITEMSIZE


@dataclass
class Window:
    first: int                    # first call (layer) index, inclusive
    last: int                     # last call (layer) index, inclusive
    calls: set[int]               # the calls compared in this window
    values: list[str]             # ONNX values marked as outputs for this window
    nbytes: int = 0               # estimated intermediates of one sample in this window (both sides)
    local: Optional[LocalGraph] = None
    want_out: dict[int, list[int]] = field(default_factory=dict)   # torch tensors to keep for the local run
    want_in: dict[int, list[int]] = field(default_factory=dict)


def value_nbytes(plan: Plan, calls: list[Call], index: GraphIndex, value: str) -> int:
    """Bytes of one mapped value, from the traced torch tensor (or the ONNX shape)."""
    kind, ci, pos = plan.table.get(value, ("", -1, 0))
    ref = None
    if kind in ("out", "in") and 0 <= ci < len(calls):
        refs = calls[ci].outputs if kind == "out" else calls[ci].inputs
        ref = refs[pos] if pos < len(refs) else None
    if ref is not None:
        shape, size = ref.shape, _ITEMSIZE.get(ref.dtype, 4)
    else:
        shape, size = index.shapes.get(value, []), 4
    n = 1
    for d in shape:
        n *= d if isinstance(d, int) and d > 0 else 1
    return n * size


def call_values(plan: Plan) -> dict[int, list[str]]:
    """Values compared (globally or locally) that are captured at each call's hooks."""
    by_call: dict[int, list[str]] = {}
    for cm in plan.calls:
        for v in cm.outputs.values():
            by_call.setdefault(cm.call, []).append(v)
    for v, (kind, ci, _pos) in plan.table.items():
        if kind in ("out", "in") and v not in by_call.get(ci, []):
            by_call.setdefault(ci, []).append(v)
    return by_call


def plan_windows(plan: Plan, calls: list[Call], index: GraphIndex, budget: Optional[int],
                 skip: set[str]) -> tuple[list[Window], int]:
    """Consecutive runs of calls whose intermediates (ORT value + torch copy) fit ``budget``.

    Returns the windows and the estimated bytes of one sample's full set of intermediates.
    """
    by_call = call_values(plan)
    sizes: dict[int, int] = {}
    seen: set[str] = set()
    total = 0
    for ci in range(len(calls)):
        b = 0
        for v in by_call.get(ci, []):
            if v in skip or v in seen:
                continue
            seen.add(v)
            b += 2 * value_nbytes(plan, calls, index, v)   # ORT output + torch-side copy
        sizes[ci] = b
        total += b
    if budget is None or total <= budget or len(calls) <= 1:
        return [_window(plan, 0, len(calls) - 1, by_call, skip, total)], total
    windows: list[Window] = []
    start, acc = 0, 0
    for ci in range(len(calls)):
        if ci > start and acc + sizes[ci] > budget:
            windows.append(_window(plan, start, ci - 1, by_call, skip, acc))
            start, acc = ci, 0
        acc += sizes[ci]
    windows.append(_window(plan, start, len(calls) - 1, by_call, skip, acc))
    return windows, total


def _window(plan: Plan, first: int, last: int, by_call: dict[int, list[str]], skip: set[str],
            nbytes: int) -> Window:
    members = set(range(first, last + 1))
    values = [v for cm in plan.calls if cm.call in members for v in cm.outputs.values() if v not in skip]
    return Window(first, last, members, list(dict.fromkeys(values)), nbytes)


def attach_local(windows: list[Window], local: Optional[LocalGraph], plan: Plan) -> None:
    """Give each window its local graph (pruned when there are several) and the tensors it needs."""
    if local is None:
        return
    for w in windows:
        if len(windows) == 1:
            w.local = local
        else:
            keep = [name for name, v in local.outputs.items() if plan.table[v][1] in w.calls]
            w.local = prune_local(local, keep) if keep else None
        w.want_out, w.want_in = {}, {}
        if w.local is None or not len(w.local.model.graph.node):
            w.local = None      # nothing of its own to compute in this window (fused, containers only...)
            continue
        needed = list(w.local.feeds.values()) + list(w.local.outputs.values())
        for v in needed:
            kind, ci, pos = plan.table.get(v, ("", -1, 0))
            if kind == "out":
                w.want_out.setdefault(ci, []).append(pos)
            elif kind == "in":
                w.want_in.setdefault(ci, []).append(pos)
        for d in (w.want_out, w.want_in):
            for k in d:
                d[k] = sorted(set(d[k]))


def prune_local(local: LocalGraph, outputs: list[str]) -> LocalGraph:
    """The part of the local graph that computes ``outputs``: a backward walk that stops at the
    cut inputs (``feed::``) and initializers; only the initializers it reaches are kept."""
    import onnx

    g = local.model.graph
    producer = {o: k for k, n in enumerate(g.node) for o in n.output if o}
    inputs = {vi.name for vi in g.input}
    keep_nodes: set[int] = set()
    used: set[str] = set()
    stack = list(outputs)
    while stack:
        name = stack.pop()
        if name in used:
            continue
        used.add(name)
        k = producer.get(name)
        if k is None or k in keep_nodes:
            continue
        keep_nodes.add(k)
        stack.extend(i for i in g.node[k].input if i)
    nodes = [g.node[k] for k in sorted(keep_nodes)]
    graph = onnx.helper.make_graph(nodes, g.name, [vi for vi in g.input if vi.name in used], [],
                                   [t for t in g.initializer if t.name in used])
    for name in outputs:
        graph.output.append(onnx.ValueInfoProto(name=name))
    model = onnx.helper.make_model(graph, opset_imports=list(local.model.opset_import),
                                   ir_version=local.model.ir_version)
    model.functions.extend(local.model.functions)
    feeds = {n: v for n, v in local.feeds.items() if n in used and n in inputs}
    outs = {n: local.outputs[n] for n in outputs}
    return LocalGraph(model, feeds, outs, local.attribution, local.first_node,
                      {k: v for k, v in local.feed_dtypes.items() if k in feeds})
