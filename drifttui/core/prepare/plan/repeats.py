"""Repeated calls of one module in one unbroken run of dynamo nodes, told apart by structure.

The dynamo exporter does not number repeated calls: a run of consecutive nodes carrying a
module's scope can hold several calls.  First by data dependency: calls that do not feed one
another form separate connected components of the run (even when their nodes interleave, as in
``act(h); act(temb)``); a component that holds a chain (``act(act(x))``, the output of call k
feeding call k+1) is cut by its repeating op pattern.  None when the count does not match.
"""
from __future__ import annotations

from typing import Optional

from drifttui.core.onnx.graph import GraphIndex


def _components(index: GraphIndex, nodes: list[int]) -> list[list[int]]:
    """Weakly connected components of ``nodes`` through values produced and consumed among them."""
    inside = set(nodes)
    parent = {n: n for n in nodes}

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a
    for n in nodes:
        for v in index.nodes[n].inputs:
            p = index.producer.get(v)
            if p in inside:
                parent[find(n)] = find(p)   # type: ignore[index]
    groups: dict[int, list[int]] = {}
    for n in nodes:
        groups.setdefault(find(n), []).append(n)
    return sorted(groups.values(), key=lambda g: g[0])


def _periodic(index: GraphIndex, nodes: list[int]) -> list[list[int]]:
    """Cut a chain by its repeating op-type pattern (one part when there is none)."""
    ops = [index.nodes[n].op_type for n in nodes]
    k = len(ops)
    period = next((p for p in range(1, k + 1) if k % p == 0 and ops == ops[:p] * (k // p)), k)
    return [nodes[i:i + period] for i in range(0, k, period)] if period else [nodes]


def split_calls(index: GraphIndex, runs: list[list[int]], wanted: int) -> Optional[list[list[int]]]:
    """Node groups, one per call in execution order, or None when they cannot be told apart.

    ``runs``: each run's non-Constant nodes in graph order.
    """
    by_components = [c for run in runs for c in _components(index, run)]
    if len(by_components) == wanted:
        return by_components
    parts = [p for comp in by_components for p in _periodic(index, comp)]
    if len(parts) == wanted:
        return parts
    # the old rule, for chains whose pattern spans the whole run
    parts = [p for run in runs for p in _periodic(index, run)]
    return parts if len(parts) == wanted else None


def _boundary_shapes(index: GraphIndex, nodes: list[int]) -> list[list]:
    inside = set(nodes)
    out = []
    for n in nodes:
        for v in index.nodes[n].outputs:
            if v and (v in index.graph_outputs or any(c not in inside for c in index.consumers.get(v, []))):
                out.append(index.shapes.get(v))
    return out


def groups_by_shape(index: GraphIndex, groups: list[list[int]], call_shapes: list[tuple]) -> Optional[list[int]]:
    """Fewer node groups than calls (the exporter computed identical calls once, e.g. a shared SiLU on
    the one time embedding every ResnetBlock2D reads): give each group, in order, the next call whose
    output shape one of the group's boundary values has.  None when some group finds no call."""
    taken: list[int] = []
    k = 0
    for g in groups:
        shapes = [s for s in _boundary_shapes(index, g) if s is not None]
        while k < len(call_shapes) and not any(
                len(s) == len(call_shapes[k]) and all(not isinstance(a, int) or a == b for a, b in zip(s, call_shapes[k]))
                for s in shapes):
            k += 1
        if k == len(call_shapes):
            return None
        taken.append(k)
        k += 1
    return taken
