"""Topological order for a graph ONNX Runtime runs although its node list is out of order.

ORT's float16 converter (``onnxruntime.transformers.float16``, ``keep_io_types=True``) appends the
Casts of the graph inputs at the end of the node list; ``onnx.checker`` then refuses the file
("Nodes in a graph must be topologically sorted") while ORT sorts it itself and runs it.  drifttui
sorts a copy the same way (stable: a node keeps its place unless an input is made later) and says
so; the user's file is never changed.
"""
from __future__ import annotations

import heapq
from typing import Any, Optional


def _inputs(node: Any) -> list[str]:
    """Explicit inputs and outer-scope names used inside subgraphs (If/Loop/Scan bodies)."""
    names = [i for i in node.input if i]
    for attr in node.attribute:
        for g in ([attr.g] if attr.HasField("g") else list(attr.graphs)):
            defined = {i.name for i in g.input} | {t.name for t in g.initializer}
            defined.update(o for sub in g.node for o in sub.output)
            names.extend(i for sub in g.node for i in _inputs(sub) if i not in defined)
    return names


def used_names(node: Any) -> list[str]:
    """The values ``node`` reads: its inputs and the outer-scope names its subgraphs read, at any depth."""
    return _inputs(node)


def node_order(nodes: list[Any], available: Optional[set[str]] = None) -> Optional[list[int]]:
    """The stable topological order of ``nodes`` (indices; Kahn's, ties by list position), or None
    when there is none: a cycle, or (with ``available`` given) an input that no node makes and that
    is not available.  Without ``available``, a value no node makes (a graph input, an initializer,
    an outer-scope name) is taken as available.  The one topological sort of the package."""
    producer = {o: k for k, n in enumerate(nodes) for o in n.output if o}
    waiting: list[set[int]] = []
    users: dict[int, list[int]] = {}
    for k, n in enumerate(nodes):
        deps = set()
        for name in _inputs(n):
            p = producer.get(name)
            if p is None:
                if available is not None and name not in available:
                    return None
                continue
            if p != k:
                deps.add(p)
        waiting.append(deps)
        for p in deps:
            users.setdefault(p, []).append(k)
    ready = [k for k, d in enumerate(waiting) if not d]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for u in users.get(k, []):
            waiting[u].discard(k)
            if not waiting[u]:
                heapq.heappush(ready, u)
    return order if len(order) == len(nodes) else None


def sorted_order(graph: Any) -> Optional[list[int]]:
    """The stable topological order of ``graph.node`` (indices), or None when the list is already
    in order or cannot be ordered (a cycle, or an input nobody makes: the checker's error stands)."""
    nodes = list(graph.node)
    known = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    order = node_order(nodes, known)
    if order is None or order == list(range(len(nodes))):
        return None
    return order


def sort_in_place(model: Any) -> Optional[str]:
    """Put ``model``'s nodes (the in-memory copy drifttui loaded, never the user's file) in
    topological order; return the node that came before an input it needs (for the note), or None
    when sorting does not apply (already sorted, or not sortable: the checker's error stands)."""
    import onnx

    graph = model.graph
    order = sorted_order(graph)
    if order is None:
        return None
    made_at = {o: k for k, n in enumerate(graph.node) for o in n.output if o}
    first_late = next((n for k, n in enumerate(graph.node)
                       if any(made_at.get(i, -1) > k for i in _inputs(n))), None)
    name = (first_late.name or first_late.op_type) if first_late is not None else "?"
    nodes = []
    for k in order:
        copy = onnx.NodeProto()
        copy.CopyFrom(graph.node[k])
        nodes.append(copy)
    del graph.node[:]
    graph.node.extend(nodes)
    return name
