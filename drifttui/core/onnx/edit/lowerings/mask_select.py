"""A selection lowered as a product with a mask of 0 and 1, computed as a selection (``rewrite: mask_select``).

An exporter that has no ONNX op for a selection writes it as ``x * mask`` and a reduction: both exporters lower
``torch.diagonal`` as ``ReduceSum(Transpose(x) * EyeLike(k=offset))`` (TorchScript's ``symbolic_opset13.diagonal``,
torchlib's ``aten_diagonal``).  torch's op reads only the selected elements; the product reads every element, and
where an unselected one is ``inf`` or NaN, ``0 * inf`` is NaN: the reduction is NaN where torch's value is finite.
The edit makes the product a selection: ``Where(mask == 0, 0, x * mask)`` on the ``Mul``'s output (the selected
elements keep their value, an inf or NaN among them included).  It keeps the node's output name and rewrites the
model in place (ValueError when it does not fit).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, rerouted, splice_sorted


def apply_mask_select(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"])
    mask = spec["mask"]
    if node.op_type != "Mul" or mask not in node.input:
        raise ValueError(f"{node.name} is not a Mul by {mask!r}")
    out = node.output[0]
    dtype = input_dtype(model, out)
    if np.dtype(dtype).kind != "f":
        raise ValueError(f"{node.name}'s output is not a float: no NaN to select out")
    out, p = rerouted(node, "mask_select")
    new = [helper.make_node("Equal", [mask, f"{p}/zero"], [f"{p}/off"], name=f"{p}/off"),
           helper.make_node("Where", [f"{p}/off", f"{p}/zero", f"{p}/raw"], [out], name=f"{p}/where")]
    splice_sorted(model, new, [numpy_helper.from_array(np.asarray(0.0, dtype=dtype), f"{p}/zero")], anchor=node)


APPLY = {"mask_select": apply_mask_select}
