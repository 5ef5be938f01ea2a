"""The ONNX value that holds an FX node's result when none is named after it (``fx_localise``).

The dynamo exporter names the value carrying an FX node's result after the node, but not always: torchlib's
``elu`` with ``scale=1`` ends on its ``Elu`` node, whose output keeps its own name (``val_6``).  That FX node's
ONNX nodes then have no value to be compared with torch's, and the node that reads ``val_6`` (the ``add`` after
it) is fed ONNX Runtime's wrong value and named wrong in its place: a consumer fed wrong values.  The one value the
group's nodes produce that a node outside the group (or the graph's output) reads is its result.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def escaping_values(model: Any, groups: list[Any], tv: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``tv`` (ONNX value -> torch's value of its FX node) with, for each group whose FX node names no value of the
    file, its one value read outside the group given the FX node's torch value (when the shapes agree)."""
    made = {v for n in model.graph.node for v in n.output if v}
    nodes = {n.name: n for n in model.graph.node}
    outputs = {o.name for o in model.graph.output}
    out = dict(tv)
    for g in groups:
        if g.name not in tv or g.name in made:
            continue
        mine = {name for name in g.nodes}
        produced = {v for name in g.nodes if name in nodes for v in nodes[name].output if v}
        read = {v for n in model.graph.node if n.name not in mine for v in n.input} | outputs
        escaping = sorted(produced & read)
        if len(escaping) == 1 and escaping[0] not in out:
            out[escaping[0]] = tv[g.name]
    return out


__all__ = ["escaping_values"]
