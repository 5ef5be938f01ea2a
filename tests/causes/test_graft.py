"""graft.py on hand-made graphs run in ONNX Runtime: the origin's nodes replaced by another graph,
names kept unique, a value the origin shares with a later node kept, opsets reconciled."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from drifttui.core.onnx.edit.graft import Graft, GraftError, graft


def _run(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})


def _full(opset=17, share=False):
    """x -> Relu (pre) -> [origin: Mul by 3 named 't', Add 1] -> Neg (post) -> y; share: post also reads t."""
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="pre"),
             helper.make_node("Mul", ["h", "three"], ["t"], name="/o/Mul"),
             helper.make_node("Add", ["t", "one"], ["o"], name="/o/Add"),
             helper.make_node("Neg", ["o"], ["y"], name="post")]
    outs = [helper.make_tensor_value_info("y", 1, [4])]
    if share:
        nodes.append(helper.make_node("Identity", ["t"], ["t_out"], name="uses_t"))
        outs.append(helper.make_tensor_value_info("t_out", 1, [4]))
    inits = [numpy_helper.from_array(np.array(3.0, np.float32), "three"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    g = helper.make_graph(nodes, "full", [helper.make_tensor_value_info("x", 1, [4])], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _sub(opset=17):
    """The right computation: in * 2 + 1, with names that clash with the file's ("t", "one")."""
    nodes = [helper.make_node("Mul", ["inp", "two"], ["t"], name="Mul"),
             helper.make_node("Add", ["t", "one"], ["out"], name="Add")]
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    g = helper.make_graph(nodes, "sub", [helper.make_tensor_value_info("inp", 1, [4])],
                          [helper.make_tensor_value_info("out", 1, [4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


X = np.array([-1.0, 0.5, 1.0, 2.0], np.float32)


def test_the_origin_computes_the_grafted_graph_and_names_stay_unique():
    full = _full()
    before = onnx.ModelProto.FromString(full.SerializeToString())
    fixed = graft(full, Graft(_sub(), ["h"], ["o"], ["/o/Mul", "/o/Add"]))
    onnx.checker.check_model(fixed)
    np.testing.assert_allclose(_run(fixed, X)[0], -(np.maximum(X, 0) * 2 + 1))
    outs = [v for n in fixed.graph.node for v in n.output]
    assert len(outs) == len(set(outs))
    assert full == before                                   # the argument is untouched
    assert not any(n.name in ("/o/Mul", "/o/Add") for n in fixed.graph.node)
    assert all(n.name.startswith("/o/") for n in fixed.graph.node if "drifttui_graft" in n.name)


def test_a_value_the_origin_shares_with_a_later_node_is_kept():
    fixed = graft(_full(share=True), Graft(_sub(), ["h"], ["o"], ["/o/Mul", "/o/Add"]))
    y, t_out = _run(fixed, X)
    np.testing.assert_allclose(y, -(np.maximum(X, 0) * 2 + 1))
    np.testing.assert_allclose(t_out, np.maximum(X, 0) * 3)   # still the file's own value


@pytest.mark.parametrize("file_opset,sub_opset", [(13, 18), (18, 13)])
def test_opsets_are_reconciled(file_opset, sub_opset):
    fixed = graft(_full(file_opset), Graft(_sub(sub_opset), ["h"], ["o"], ["/o/Mul", "/o/Add"]))
    assert len({o.version for o in fixed.opset_import if o.domain in ("", "ai.onnx")}) == 1
    np.testing.assert_allclose(_run(fixed, X)[0], -(np.maximum(X, 0) * 2 + 1))


def test_a_mismatched_graft_is_refused():
    with pytest.raises(GraftError, match="input"):
        graft(_full(), Graft(_sub(), ["h", "x"], ["o"], ["/o/Mul", "/o/Add"]))
    with pytest.raises(GraftError, match="no value"):
        graft(_full(), Graft(_sub(), ["nowhere"], ["o"], ["/o/Mul", "/o/Add"]))
