"""The amplification counterfactual's graph edit (``onnx/edit/numerics/origin64.py``) on a hand-made graph: a cancellation
``(x - tanh(x)) * 1e5`` of small inputs, computed in float64 in the file, its outputs float32 as before."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.onnx.edit.numerics.origin64 import apply_origin_float64


def _graph() -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "small"], ["s"], name="scale"),
         helper.make_node("Tanh", ["s"], ["t"], name="tanh"),
         helper.make_node("Sub", ["s", "t"], ["d"], name="sub"),
         helper.make_node("Mul", ["d", "gain"], ["y"], name="gain"),
         helper.make_node("Relu", ["y"], ["z"], name="after")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [64])],
        [numpy_helper.from_array(np.asarray(1e-2, np.float32), "small"),
         numpy_helper.from_array(np.asarray(1e5, np.float32), "gain")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})


def test_the_region_computes_in_float64_and_hands_on_float32():
    x = np.linspace(-4, 4, 64, dtype=np.float32)
    s64 = x.astype(np.float64) * np.float64(np.float32(1e-2))
    exact = (s64 - np.tanh(s64)) * 1e5
    model = _graph()
    before = _run(model, x)
    apply_origin_float64(model, {"nodes": ["scale", "tanh", "sub", "gain"], "inputs": ["x", "small", "gain"],
                                 "outputs": ["s", "t", "d", "y"]})
    onnx.checker.check_model(model, full_check=True)
    y, z = _run(model, x)
    assert y.dtype == np.float32 and z.dtype == np.float32        # what reads the region sees float32
    assert np.abs(y - exact).max() < np.abs(before[0] - exact).max() / 10
    assert np.abs(y - exact).max() <= 1e-4 * np.abs(exact).max()
    np.testing.assert_array_equal(z, np.maximum(y, 0))            # the node after the region reads its value
    assert sum(n.op_type == "Cast" for n in model.graph.node) == 3 + 4
