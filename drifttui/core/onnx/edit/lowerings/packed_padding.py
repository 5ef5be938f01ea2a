"""Graph edit: write torch's padding value at the steps past each sequence's length of a recurrent node
(``causes/propose/edits/packed_padding.py``).

ONNX's ``LSTM`` / ``GRU`` / ``RNN`` with a ``sequence_lens`` input output 0 at the steps past each batch element's
length (the spec's padding); torch's ``pad_packed_sequence(..., padding_value=v)`` fills them with ``v``.
``packed_padding`` reroutes the node's ``Y`` (``[T, directions, B, H]``, layout 0) through
``Where(step >= sequence_lens[b], v, Y)``: the steps inside each length keep the kernel's values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, splice_sorted

RECURRENT = "LSTM|GRU|RNN"


def padding_value(spec: dict[str, Any]) -> float:
    """The spec's value: a number, or its text for a value JSON cannot hold (``-inf``)."""
    return float(spec["value"])


def apply_packed_padding(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], RECURRENT)
    if len(node.input) < 5 or not node.input[4] or not node.output or not node.output[0]:
        raise ValueError(f"{node.name} has no sequence_lens or no Y output: no padded steps to write")
    if any(a.name == "layout" and a.i != 0 for a in node.attribute):
        raise ValueError(f"{node.name} is batch-major (layout=1)")
    y, p = node.output[0], f"{node.name}/drifttui_pad"
    dtype = np.dtype(input_dtype(model, node.input[0]))
    i64 = helper.TensorProto.INT64
    new = [
        helper.make_node("Shape", [node.input[0]], [f"{p}/shape"], name=f"{p}/shape"),
        helper.make_node("Gather", [f"{p}/shape", f"{p}/zero"], [f"{p}/steps"], name=f"{p}/steps"),
        helper.make_node("Range", [f"{p}/zero", f"{p}/steps", f"{p}/one"], [f"{p}/t"], name=f"{p}/range"),
        helper.make_node("Reshape", [f"{p}/t", f"{p}/tshape"], [f"{p}/t4"], name=f"{p}/t4"),
        helper.make_node("Cast", [node.input[4]], [f"{p}/lens"], name=f"{p}/lens", to=i64),
        helper.make_node("Reshape", [f"{p}/lens", f"{p}/lshape"], [f"{p}/l4"], name=f"{p}/l4"),
        helper.make_node("Less", [f"{p}/t4", f"{p}/l4"], [f"{p}/inside"], name=f"{p}/inside"),
        helper.make_node("Where", [f"{p}/inside", f"{p}/y", f"{p}/value"], [y], name=f"{p}/where"),
    ]
    node.output[0] = f"{p}/y"     # the Where writes Y's name: every reader reads the padded value
    inits = [numpy_helper.from_array(np.asarray(0, np.int64), f"{p}/zero"),
             numpy_helper.from_array(np.asarray(1, np.int64), f"{p}/one"),
             numpy_helper.from_array(np.asarray([-1, 1, 1, 1], np.int64), f"{p}/tshape"),
             numpy_helper.from_array(np.asarray([1, 1, -1, 1], np.int64), f"{p}/lshape"),
             numpy_helper.from_array(np.asarray(padding_value(spec), dtype), f"{p}/value")]
    splice_sorted(model, new, inits, anchor=node)


APPLY = {"packed_padding": apply_packed_padding}
