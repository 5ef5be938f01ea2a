"""Which nodes each call's local run computes: the cut rule of the local-error graph (local.py), and the
nodes between a call's own values and the cuts before them.

The local run cuts an edge where a mapped value crosses from one call's nodes to another's (or is a
graph input) and feeds the PyTorch value there; every other edge is computed by ONNX Runtime.  So a
value's own error is made by the nodes reached backwards from it without crossing a cut: those are
the nodes whose precision that error pays for.  They need not be the nodes ``plan.node_call`` gives the
call: a QOperator view's way back (``QuantizeLinear`` of the PyTorch value, onnx/qviews.py) and a
MaxPool on its integers belong to the region of a later call that reads them too (a DenseNet's
``features.pool0``, whose integers the next block's QLinearConcat reads), yet ``pool0``'s own value is
computed through them.  prepare/precision.py budgets each call with the nodes of its local run.
"""
from __future__ import annotations

from typing import Any


def is_cut(index: Any, plan: Any, value: str, reader: int) -> bool:
    """The local run feeds ``value`` from PyTorch to node ``reader`` (a graph input, or a mapped value
    made by another call's node) instead of computing it."""
    p = index.producer.get(value)
    entry = plan.table.get(value)
    return p is None or (entry is not None and (plan.node_call[p] != plan.node_call[reader] or entry[0] == "graph_in"))


def value_owners(index: Any, plan: Any) -> dict[str, int]:
    """Each mapped value the local run outputs -> the call whose own error it measures."""
    out: dict[str, int] = {}
    for v, (kind, ci, _pos) in plan.table.items():
        p = index.producer.get(v)
        if p is None or kind == "graph_in":
            continue
        owner = ci if kind == "out" else plan.node_call[p]
        if owner is not None:
            out[v] = owner
    return out


def run_nodes(index: Any, plan: Any) -> dict[int, set[int]]:
    """Call -> the nodes its local run computes (empty when the plan is not localized: no local run)."""
    if not plan.localized:
        return {}
    out: dict[int, set[int]] = {}
    for v, owner in value_owners(index, plan).items():
        seen = out.setdefault(owner, set())
        stack = [index.producer[v]]
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            for u in index.nodes[k].inputs:
                if u and u not in index.initializers and not is_cut(index, plan, u, k):
                    stack.append(index.producer[u])
    return out
