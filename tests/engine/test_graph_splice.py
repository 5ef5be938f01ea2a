"""The one splice of the graph edits (``rewriting.splice_sorted``): the nodes an edit adds are put where
the graph needs them (a new node may feed one already in the graph), the nodes it replaces are gone,
the result runs in ONNX Runtime and computes what the edit says; an edit that closes a cycle is refused
as a ValueError, which ``patches.apply`` turns into a PatchError, not a crash."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted


def _model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="/body/relu"),
             helper.make_node("Neg", ["r"], ["y"], name="/body/neg")]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_a_node_that_feeds_an_existing_one_is_sorted_before_it():
    m = _model()
    neg = find_node(m, "/body/neg", "Neg")
    neg.input[0] = "shifted"                       # the new Add now feeds the existing Neg
    add = helper.make_node("Add", ["r", "one"], ["shifted"], name="/body/neg/add")
    splice_sorted(m, [add], [numpy_helper.from_array(np.asarray(1.0, np.float32), "one")], anchor=neg)
    assert [n.op_type for n in m.graph.node] == ["Relu", "Add", "Neg"]
    assert m.graph.node[1].name == "/body/neg_add"       # scoped in the anchor's module, as ``scoped`` names it
    x = np.asarray([-2.0, 0.5, 3.0], np.float32)
    assert np.array_equal(_run(m, x), -(np.maximum(x, 0) + 1))


def test_the_dropped_node_is_gone_and_its_replacement_computes():
    m = _model()
    relu = find_node(m, "/body/relu")
    splice_sorted(m, [helper.make_node("Abs", ["x"], ["r"], name="/body/abs")], anchor=relu, drop=[relu])
    assert [n.op_type for n in m.graph.node] == ["Abs", "Neg"]
    x = np.asarray([-2.0, 0.5, 3.0], np.float32)
    assert np.array_equal(_run(m, x), -np.abs(x))


def test_an_edit_that_closes_a_cycle_is_refused():
    m = _model()
    relu = find_node(m, "/body/relu")
    relu.input[0] = "back"
    with pytest.raises(ValueError, match="cycle"):
        splice_sorted(m, [helper.make_node("Identity", ["y"], ["back"], name="/body/back")])


def test_find_node_names_what_is_missing():
    m = _model()
    with pytest.raises(ValueError, match="no Pow named '/body/relu'"):
        find_node(m, "/body/relu", "Pow")
    assert find_node(m, "/body/relu", "Abs|Relu").op_type == "Relu"
