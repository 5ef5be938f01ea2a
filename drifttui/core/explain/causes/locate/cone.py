"""The part of a case's graph that computes some of its values, at most a fixed number of nodes: the nodes nearest
those values first (a breadth-first walk up from them), and the values that feed the part from outside (the case's
feeds, or values computed by the nodes left out, which the caller supplies from a run of the whole graph).

A float64 run of a whole origin by the ONNX reference implementation costs in proportion to its nodes, so it was
skipped past 400 of them; a question about one node (is its NaN float32's rounding?) needs only the nodes before
it, and mostly the nearest: a float64 run of the cone answers it at a bounded cost on any origin.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Optional

import numpy as np


def cone(model: Any, values: list[str], most: int) -> tuple[list[Any], list[str]]:
    """(the nodes, in the graph's order, that compute ``values``: at most ``most`` of them, nearest first, plus the
    Constant nodes they read; the values they read that none of them computes and no initializer holds)."""
    producer = {o: n for n in model.graph.node for o in n.output if o}
    picked: dict[int, Any] = {}
    counted = 0
    todo = deque(v for v in values if v in producer)
    while todo:
        n = producer[todo.popleft()]
        if id(n) in picked:
            continue
        free = n.op_type == "Constant" and not n.input
        if not free and counted >= most:
            continue
        picked[id(n)] = n
        counted += 0 if free else 1
        todo.extend(v for v in n.input if v in producer)
    nodes = [n for n in model.graph.node if id(n) in picked]
    made = {o for n in nodes for o in n.output if o}
    stored = {t.name for t in model.graph.initializer}
    outside = [v for n in nodes for v in n.input if v and v not in made and v not in stored]
    return nodes, list(dict.fromkeys(outside))


def cone_model(model: Any, values: list[str], most: int, known: dict[str, np.ndarray]) -> Optional[tuple[Any, dict]]:
    """(a model of ``values``' cone, its inputs the values that feed it; its feeds from ``known``), or None when a
    value that feeds it is not known."""
    from onnx import helper
    from onnx.helper import np_dtype_to_tensor_dtype

    nodes, outside = cone(model, values, most)
    if any(v not in known for v in outside):
        return None
    feeds = {v: np.asarray(known[v]) for v in outside}
    used = {v for n in nodes for v in n.input}
    inputs = [helper.make_tensor_value_info(v, np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for v, a in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(v) for v in values]
    graph = helper.make_graph(nodes, "cone", inputs, outputs, [t for t in model.graph.initializer if t.name in used])
    cut = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    return cut, feeds
