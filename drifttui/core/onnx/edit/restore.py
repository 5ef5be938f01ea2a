"""Put back what the model says: a weight's values (an initializer or a Constant node's tensor, same
name, dtype and shape) and a node's attribute, on a copy (``drifttui repair`` of a genuine drift whose
evidence is by content: prepare/qweight_check.py, prepare/attr_check.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.onnx.weights import with_array


class RestoreError(ValueError):
    """The copy has no initializer, Constant or node of that name."""


def restore(model: Any, tensors: dict[str, np.ndarray], attrs: list[tuple[str, str, Any]]) -> Any:
    """A copy of ``model`` with each initializer (or Constant value) named in ``tensors`` holding its new
    array, and each ``(node output, attribute, value)`` set (a node is named by its first output)."""
    import onnx

    copy = copy_model(model)
    left = dict(tensors)
    for t in copy.graph.initializer:
        if t.name in left:
            t.CopyFrom(with_array(t, left.pop(t.name)))
    by_output = {n.output[0]: n for n in copy.graph.node if n.output}
    for name in list(left):
        node = by_output.get(name)
        value = next((a for a in node.attribute if a.name == "value"), None) if node is not None else None
        if node is None or node.op_type != "Constant" or value is None:
            raise RestoreError(f"no initializer or Constant named {name}")
        value.t.CopyFrom(with_array(value.t, left.pop(name)))
    for output, attr, v in attrs:
        node = by_output.get(output)
        if node is None:
            raise RestoreError(f"no node computes {output}")
        for a in [a for a in node.attribute if a.name == attr]:
            node.attribute.remove(a)
        node.attribute.append(onnx.helper.make_attribute(attr, v))
    return copy
