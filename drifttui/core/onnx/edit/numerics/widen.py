"""A float32 graph rewritten to compute in float64 (the conditioning counterfactual of
``causes/propose/numerics/conditioning.py``): every float32 input, output, initializer, ``Constant`` and
``ConstantOfShape`` value, and every ``Cast`` to float32, made float64.  Run by the ONNX reference
implementation (numpy), which computes each op in the element type it is given.  A copy: the argument
is never edited.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.onnx.weights import read_tensor


def _widen_tensor(t: Any) -> None:
    from onnx import TensorProto, numpy_helper

    if t.data_type == TensorProto.FLOAT:
        t.CopyFrom(numpy_helper.from_array(read_tensor(t).astype(np.float64), t.name))


def to_float64(model: Any) -> Any:
    from onnx import TensorProto

    m = copy_model(model)
    g = m.graph
    for vi in [*g.input, *g.output]:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    del g.value_info[:]
    for t in g.initializer:
        _widen_tensor(t)
    for n in g.node:
        for a in n.attribute:
            if a.name == "to" and n.op_type == "Cast" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.DOUBLE
            elif a.HasField("t"):
                _widen_tensor(a.t)
    return m
