"""The opmath rewrite's ``per_op`` form rounds where torch rounds (forms44n's mu-law of a float16 waveform): torch
computes a composite op (dynamo's ``log1p``: Add then Log, one FX call) in float32 and rounds once, at its result;
``_interior`` leaves the values inside one FX call unrounded (rounding ``1 + x`` moves the mu-law bins)."""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

LOG1P = "%log1p : [num_users=1] = call_function[target=torch.ops.aten.log1p.default](args = (%mul,), kwargs = {})"


def _fx(node, text):
    p = node.metadata_props.add()
    p.key, p.value = "pkg.torch.onnx.fx_node", text
    return node


def _model():
    """x (float16) -> log1p as Add(1) + Log (one FX call) -> Div by a float16 constant of log1p(255) -> y."""
    c = numpy_helper.from_array(np.array(math.log1p(255), np.float16), "c")
    one = numpy_helper.from_array(np.array(1.0, np.float16), "one")
    nodes = [_fx(helper.make_node("Add", ["x", "one"], ["t"], name="n2"), LOG1P),
             _fx(helper.make_node("Log", ["t"], ["l"], name="n3"), LOG1P),
             helper.make_node("Div", ["l", "c"], ["y"], name="div")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4096])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4096])], [c, one])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_the_values_inside_one_fx_call_are_not_rounded():
    from drifttui.core.explain.causes.propose.numerics.opmath import _interior

    m = _model()
    assert _interior(m, list(m.graph.node)) == {"t"}
