"""The value that ends a wrong call's lowering, where no value of the file holds the call's (``align_graph.closest``).

The fuzzer's source-derived pool, seed 24102 (TorchScript): ``aten.bitwise_left_shift.Scalar_Tensor(3, n)`` of an
int64 ``n`` of a few hundred, then ``glu``.  torch's shift is 0 past 63 bits; the file computes
``3 * Cast(Pow(2, Cast(n, float)), int64)``, wrapped past 2**63.  Of the file's values, ``Cast(n, float)`` was the
closest to torch's (mostly zeros and a few 3 * 2**54: a value of hundreds is off by about all of the largest
element, as zeros are), so the shift's nodes were that Cast alone, and the verified re-export, which changes the
``Pow``, was told as "in torch's glu".  A value that far off holds nothing of the call: the call's own type first.
"""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.align_graph import call_group
from drifttui.core.explain.causes.locate.case import Case


def _file():
    nodes = [helper.make_node("Cast", ["x"], ["n"], name="long", to=7),
             helper.make_node("Cast", ["n"], ["nf"], name="to_float", to=1),
             helper.make_node("Pow", ["two", "nf"], ["p"], name="pow"),
             helper.make_node("Cast", ["p"], ["pi"], name="to_long", to=7),
             helper.make_node("Mul", ["three", "pi"], ["s"], name="times3")]
    inits = [numpy_helper.from_array(np.asarray(2.0, np.float32), "two"),
             numpy_helper.from_array(np.asarray(3, np.int64), "three")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
                              [helper.make_tensor_value_info("s", TensorProto.INT64, [6, 32])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_wrong_calls_nodes_reach_its_own_typed_result():
    torch.manual_seed(0)
    x = (torch.randn(6, 32) * 100).float()
    n = x.long()
    shift = torch.ops.aten.bitwise_left_shift.Scalar_Tensor(3, n)
    model = _file()
    names = ["long", "to_float", "pow", "to_long", "times3"]
    every = _file()                 # every value fetched, as the alignment fetches them
    every.graph.output.extend(helper.make_tensor_value_info(v, t, [6, 32]) for v, t in
                              (("n", TensorProto.INT64), ("nf", TensorProto.FLOAT), ("p", TensorProto.FLOAT),
                               ("pi", TensorProto.INT64)))
    sess = ort.InferenceSession(every.SerializeToString(), providers=["CPUExecutionProvider"])
    case = Case(model, {"x": x.numpy()}, {"s": shift.numpy()}, "body", 0, 0, 1e-4, 1e-4, nodes=names, opset=17)
    got = dict(zip(["n", "nf", "p", "pi", "s"], sess.run(["n", "nf", "p", "pi", "s"], {"x": x.numpy()})))
    assert not np.array_equal(got["s"], shift.numpy())                  # the lowering wraps past 63 bits
    ops = [("placeholder", "input", x.numpy(), [], "float32"),
           ("call_function", "torch.Tensor.long", n.numpy(), [0], "int64"),
           ("call_function", "aten.bitwise_left_shift.Scalar_Tensor", shift.numpy(), [1], "int64"),
           ("output", "", None, [2], "")]
    found = {0: "x", 1: "n"}
    group = call_group(case, ops, found, 2, {"x": x.numpy(), **got})
    assert "pow" in group and "to_long" in group, group
