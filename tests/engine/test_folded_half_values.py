"""A float16 initializer the size of none of the model's tensors is a value of the forward the exporter folded, not
a converted weight (issue 30, batch 48B): StyleGAN2-ADA's float16 layer casts ``const.repeat(n, 1, 1, 1)`` to
float16; the dynamo exporter folds the repeat and the cast into a (1, 2n, 4, 4) float16 initializer, the TorchScript
exporter keeps a Cast.  The precision scan took the initializer for a converter's weight and held the dynamo file to
the float16 budget (WITHIN BUDGET) where the TorchScript file of the same model is held to the float32 rule (a
drift, verified and repaired).  ``prepare/precision.py``: given the torch model's tensor sizes, such an initializer
is evidence of the model's own cast (``float16 folded values``), held to the float32 rule like a Cast."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _index(size: int):
    from drifttui.core.onnx.graph import build_index

    c = numpy_helper.from_array(np.linspace(0.5, 1.5, size).reshape(1, size).astype(np.float16), "folded")  # no fill
    nodes = [helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16),
             helper.make_node("Mul", ["xh", "folded"], ["yh"]),
             helper.make_node("Cast", ["yh"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])], [c])
    return build_index(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


def test_a_float16_initializer_sized_like_no_model_tensor_is_the_models_own_cast():
    from drifttui.core.prepare.precision import scan

    s = scan(_index(12), sizes=frozenset({36, 2, 32}))
    assert not s.reduced and s.ops.get("float16 folded values") == 1, s.ops
    assert "held to the float32 rule" in s.summary(), s.summary()


def test_a_float16_initializer_sized_like_a_model_tensor_is_still_a_weight():
    from drifttui.core.prepare.precision import model_sizes, scan
    from torch import nn

    assert model_sizes(nn.Linear(4, 3)) == frozenset({12, 3}) and model_sizes(object()) is None
    assert scan(_index(12), sizes=frozenset({12, 3})).reduced
    assert scan(_index(12)).reduced        # no torch model's sizes: every float16 initializer is a weight
