"""A float16 tensor of one repeated value (``torch.full(..., -inf, dtype=half)``, ``zeros_like`` of a float16
tensor: the running max and sum of a chunked softmax) is a fill the model made, not a converted weight: the dynamo
exporter stores it as an initializer where TorchScript writes a Constant node, and the file must be held to the same
rule either way (forms48a's ``chunk_half``: the float32 rule, the dtype check's business, not a converter's float16
budget).  A float16 initializer of varying values is still a converter's evidence."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _scan(values: np.ndarray):
    from drifttui.core.onnx.graph import build_index
    from drifttui.core.prepare.precision import scan

    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("Max", ["h", "m"], ["y"]),
             helper.make_node("Cast", ["y"], ["out"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(values.astype(np.float16), "m")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return scan(build_index(model))


def test_a_filled_float16_constant_is_no_converters_weight():
    for fill in (-np.inf, 0.0):
        out = _scan(np.full((2, 3), fill))
        assert not out.reduced and "held to the float32 rule" in out.summary(), out.summary()
        assert out.ops.get("float16 filled constants") == 1


def test_a_float16_initializer_of_varying_values_still_makes_a_converters_file():
    out = _scan(np.arange(6.0).reshape(2, 3))
    assert out.reduced and out.ops.get("float16 initializers") == 1, out.summary()


def test_a_filled_float16_norm_scale_is_still_a_weight():
    """a fresh float16 LayerNorm's scale (all ones) is a parameter a converter writes, not a fill the model made."""
    from drifttui.core.onnx.graph import build_index
    from drifttui.core.prepare.precision import scan

    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("LayerNormalization", ["h", "g"], ["y"], axis=-1),
             helper.make_node("Cast", ["y"], ["out"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(np.ones(3, np.float16), "g")])
    out = scan(build_index(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])))
    assert out.reduced and out.ops.get("float16 initializers") == 1, out.summary()
