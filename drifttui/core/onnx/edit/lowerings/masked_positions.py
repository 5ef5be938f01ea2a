"""The positions a key-padding mask marks, set to 0 on a node's output (``rewrite: zero_masked``); a float
attention mask read as a boolean one (``rewrite: bool_mask``).

``nn.TransformerEncoder`` in eval (``enable_nested_tensor=True``, the default) with a
``src_key_padding_mask`` runs torch's fast path: the sequence becomes a nested tensor without the
padded positions and is padded back with 0 (pytorch/pytorch#97111, #86120).  No exporter traces that
path: the file computes the padded positions like any other.  The edit gives the file torch's zeros:
``Where(mask[..., None], 0, y)`` (the mask ``(N, S)``, transposed first when the output is ``(S, N, E)``).
It keeps the node's output name and rewrites the model in place (ValueError when it does not fit).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, rerouted, splice_sorted


def apply_zero_masked(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"])
    mask = spec["mask"]
    if not any(mask in (*n.output,) for n in model.graph.node) and mask not in {i.name for i in model.graph.input}:
        raise ValueError(f"no value named {mask!r} holds the padding mask")
    out = node.output[0]
    dtype = input_dtype(model, out)
    out, p = rerouted(node, "zero_masked")
    new = [helper.make_node("Unsqueeze", [mask if spec.get("batch_first", True) else f"{p}/mask_t", f"{p}/axis"],
                            [f"{p}/mask"], name=f"{p}/unsqueeze"),
           helper.make_node("Where", [f"{p}/mask", f"{p}/zero", f"{p}/raw"], [out], name=f"{p}/where")]
    if not spec.get("batch_first", True):
        new.insert(0, helper.make_node("Transpose", [mask], [f"{p}/mask_t"], name=f"{p}/transpose", perm=[1, 0]))
    splice_sorted(model, new, [numpy_helper.from_array(np.asarray(0.0, dtype=dtype), f"{p}/zero"),
                               numpy_helper.from_array(np.asarray([-1], dtype=np.int64), f"{p}/axis")], anchor=node)


def apply_bool_mask(model: Any, spec: dict[str, Any]) -> None:
    """Input ``spec["input"]`` of the Add ``spec["node"]`` (a float mask added to attention scores) read as a
    boolean mask, as ``nn.TransformerEncoderLayer``'s fused fast path reads it: ``Where(m == 0, 0, -inf)``, every
    non-zero entry masked and no value added (pytorch/pytorch#118628)."""
    from onnx import helper, numpy_helper

    node = next((n for n in model.graph.node if n.name == spec["node"]), None)
    k = int(spec.get("input", 1))
    if node is None or node.op_type != "Add" or k >= len(node.input):
        raise ValueError(f"no Add named {spec['node']!r} with an input {k}")
    mask = node.input[k]
    dtype = input_dtype(model, mask)
    p = f"{node.name}/drifttui_bool_mask"
    new = [helper.make_node("Equal", [mask, f"{p}/zero"], [f"{p}/kept"], name=f"{p}/equal"),
           helper.make_node("Where", [f"{p}/kept", f"{p}/zero", f"{p}/masked"], [f"{p}/mask"], name=f"{p}/where")]
    node.input[k] = f"{p}/mask"
    splice_sorted(model, new, [numpy_helper.from_array(np.asarray(0.0, dtype=dtype), f"{p}/zero"),
                               numpy_helper.from_array(np.asarray(-np.inf, dtype=dtype), f"{p}/masked")],
                  anchor=node)


APPLY = {"zero_masked": apply_zero_masked, "bool_mask": apply_bool_mask}
