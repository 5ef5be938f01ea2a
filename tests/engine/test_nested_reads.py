"""The file written for the user (keep_float32.without_views) keeps a value that only a subgraph
nested two deep reads: repair's copy of a TorchScript embedding_bag (a Loop whose body holds an If)
lost it, and the written file failed the ONNX checker ("input ... is not output of any previous nodes")."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from drifttui.core.onnx.edit.keep.float32 import without_views


def _nested_model() -> onnx.ModelProto:
    outer = helper.make_node("Mul", ["x", "x"], ["sq"], name="sq")        # read only inside the If
    then_g = helper.make_graph([helper.make_node("Add", ["sq", "one"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Identity", ["sq"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("If", ["cond_in"], ["y"], then_branch=then_g, else_branch=else_g)],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    loop = helper.make_node("Loop", ["n", "c"], ["ys"], body=body, name="loop")
    graph = helper.make_graph(
        [outer, loop], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("ys", TensorProto.FLOAT, [None, 2])],
        [helper.make_tensor("n", TensorProto.INT64, [], [2]), helper.make_tensor("c", TensorProto.BOOL, [], [True]),
         helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_value_read_only_two_subgraphs_deep_is_kept_in_the_users_file():
    model = without_views(_nested_model())
    assert [n.name for n in model.graph.node] == ["sq", "loop"]
    assert {t.name for t in model.graph.initializer} >= {"one"}
    onnx.checker.check_model(model)
    out = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.array([1.0, 2.0], np.float32)})[0]
    np.testing.assert_allclose(out, [[2.0, 5.0], [2.0, 5.0]])
