"""An autocast call's input the file holds rounded to float16 is compared as float16 (``prepare/local.autocast_input``).

Under ``torch.autocast`` each Linear rounds its float32 input to float16 inside; TorchScript shares one Cast of x for
every Linear that reads it.  ``repair``'s per-op opmath rewrite turns that Cast into a rounding pair (Cast to float16,
Cast back to float32), so the Linears read a float32 value holding float16 numbers.  Paired with it, a Linear's torch
input (unrounded x) was held to float32's 1e-4 against the rounded value: ``check`` of a repaired file whose outputs
equal torch's named a false origin.  The widened value holds float16 numbers, and the call rounds its input to
float16 itself: its local comparison takes float16's floor.  Anywhere else a float16 round trip is a drift
(``tests/causes/test_repro_repair.py``'s ``half``: compared as float32, found and repaired).
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper


def _index(to_wide: int = TensorProto.FLOAT, narrow: int = TensorProto.FLOAT16):
    from drifttui.core.onnx.graph import build_index

    nodes = [helper.make_node("Cast", ["x"], ["h"], to=narrow, name="round"),
             helper.make_node("Cast", ["h"], ["w"], to=to_wide, name="back"),
             helper.make_node("Relu", ["w"], ["r"], name="relu"),
             helper.make_node("Cast", ["r"], ["d"], to=TensorProto.DOUBLE, name="wide")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("d", TensorProto.DOUBLE, [2, 4])])
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    return build_index(model)


def test_a_widened_float16_value_is_known_as_float16_numbers():
    from drifttui.core.prepare.local import widened_from

    index = _index()
    assert widened_from(index, "w") == "float16"
    assert widened_from(index, "r") is None                   # no Cast: float32 numbers
    assert widened_from(index, "d") is None                   # float32 widened to float64
    assert widened_from(_index(narrow=TensorProto.BFLOAT16), "w") == "bfloat16"


def test_float16_numbers_are_compared_at_float16s_floor():
    import numpy as np
    import torch

    from drifttui.core.base.dtypes import held_as
    from drifttui.core.base.metrics import compare

    x = torch.linspace(-3, 3, 64)
    rounded = x.half().float().numpy()                   # what the file's rounding pair holds, typed float32
    assert compare(x, rounded, 1e-4, 1e-4).max_abs > 5e-4
    assert not compare(x, held_as(rounded, "float16"), 1e-4, 1e-4).fails()
    assert compare(x, rounded, 1e-4, 1e-4).fails()
    assert np.array_equal(held_as(rounded, "float16").astype(np.float32), rounded)    # the same numbers
