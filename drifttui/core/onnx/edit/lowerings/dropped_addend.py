"""Graph edit: put back a constant addend the export dropped (``causes/propose/edits/dropped_addend.py``).

torch's graph adds a number to a value (``torch.log(p + 1e-10)``, ``1.0 / (d + 1e-8)``, a denominator
``+ 1e-8``) and the file reads the value bare: an optimizer took the ``Add`` of a constant close to 0 for a
no-op (the dynamo exporter's ``x + 0`` rule matches constants within 1e-8 of 0).  ``dropped_addend`` writes
``Add(x, c)`` before the one node input that lost it (``spec["node"]``'s input ``spec["input"]``): the other
readers of ``x`` keep the bare value, as in torch's graph.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, splice_sorted


def apply_dropped_addend(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"])
    pos = int(spec.get("input", 0))
    if pos >= len(node.input) or not node.input[pos]:
        raise ValueError(f"no node {spec['node']!r} with an input {pos}")
    src = node.input[pos]
    dtype = np.dtype(input_dtype(model, src))
    if dtype.kind != "f":
        raise ValueError(f"{src} is not a float value: no addend to put back")
    p = f"{node.name or src}/drifttui_addend{pos}"
    add = helper.make_node("Add", [src, f"{p}/c"], [f"{p}/sum"], name=p)
    node.input[pos] = f"{p}/sum"
    splice_sorted(model, [add], [numpy_helper.from_array(np.asarray(float(spec["value"]), dtype=dtype), f"{p}/c")],
                  anchor=node)


APPLY = {"dropped_addend": apply_dropped_addend}
