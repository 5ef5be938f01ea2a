"""Mapping by structure on graphs built with onnx.helper: repeated calls split by data
dependency, tuple outputs of scope-less producers, folds decided by structure."""
from onnx import TensorProto, helper

from drifttui.core.runtime.torch_hooks import Call, TensorRef
from drifttui.core.onnx.graph import build_index
from drifttui.core.prepare.plan.mapping import build_plan
from drifttui.core.result import UNMAPPED
from tests.engine.graphs import scoped_node as _node


def _model(nodes, inputs=("x",), outputs=("y",), shape=(2, 4)):
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape))
    g = helper.make_graph(nodes, "g", [vi(i) for i in inputs], [vi(o) for o in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _call(i, module, call, depth, parent, n_out=1, shape=(2, 4)):
    return Call(i, module, "M", call, depth, parent, inputs=[TensorRef(shape, "float32")],
                outputs=[TensorRef(shape, "float32") for _ in range(n_out)])


def test_interleaved_independent_calls_are_split_by_data_dependency():
    # act(a) and act(b) back to back, their nodes interleaved: no repeating op pattern
    nodes = [
        _node("Sigmoid", ["x"], ["s0"], "n0", ["", "act", "sigmoid"]),
        _node("Sigmoid", ["z"], ["s1"], "n1", ["", "act", "sigmoid_1"]),
        _node("Mul", ["x", "s0"], ["a"], "n2", ["", "act", "mul"]),
        _node("Mul", ["z", "s1"], ["b"], "n3", ["", "act", "mul_1"]),
        _node("Add", ["a", "b"], ["y"], "n4", ["", "add"]),
    ]
    index = build_index(_model(nodes, inputs=("x", "z")))
    calls = [_call(0, "", 0, 0, None), _call(1, "act", 0, 1, 0), _call(2, "act", 1, 1, 0)]
    plan = build_plan(index, calls, ["", "act"], {"": False, "act": False})
    assert plan.calls[1].status != UNMAPPED and plan.calls[2].status != UNMAPPED, plan.calls[1].note
    assert plan.calls[1].outputs == {0: "a"}
    assert plan.calls[2].outputs == {0: "b"}


def test_chained_calls_in_one_run_are_split_where_one_feeds_the_next():
    nodes = [
        _node("Sigmoid", ["x"], ["s0"], "n0", ["", "act", "sigmoid"]),
        _node("Mul", ["x", "s0"], ["a"], "n1", ["", "act", "mul"]),
        _node("Sigmoid", ["a"], ["s1"], "n2", ["", "act", "sigmoid_1"]),
        _node("Mul", ["a", "s1"], ["b"], "n3", ["", "act", "mul_1"]),
        _node("Relu", ["b"], ["y"], "n4", ["", "out", "relu"]),
    ]
    index = build_index(_model(nodes))
    calls = [_call(0, "", 0, 0, None), _call(1, "act", 0, 1, 0), _call(2, "act", 1, 1, 0), _call(3, "out", 0, 1, 0)]
    plan = build_plan(index, calls, ["", "act", "out"], {"": False, "act": False, "out": False})
    assert plan.calls[1].outputs == {0: "a"} and plan.calls[2].outputs == {0: "b"}


def test_tuple_outputs_of_a_scopeless_split_are_paired_in_order():
    # chunk(2) inside "m": the optimiser recreated the Split without metadata, so its scope is
    # filled with the common scope of its neighbours (the root), outside "m"
    split = helper.make_node("Split", ["h", "sizes"], ["p0", "p1"], name="opt_split", axis=1)
    sizes = helper.make_node("Constant", [], ["sizes"], name="c",
                             value=helper.make_tensor("v", TensorProto.INT64, [2], [2, 2]))
    nodes = [
        _node("Relu", ["x"], ["h"], "n0", ["", "m", "relu"]),
        sizes, split,
        _node("Sub", ["p1", "p0"], ["y"], "n3", ["", "sub"]),
    ]
    m = _model(nodes)
    for name, shape in (("h", [2, 4]), ("p0", [2, 2]), ("p1", [2, 2])):
        m.graph.value_info.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    index = build_index(m)
    calls = [_call(0, "", 0, 0, None), _call(1, "m", 0, 1, 0, n_out=2, shape=(2, 2))]
    calls[1].inputs = [TensorRef((2, 4), "float32")]
    plan = build_plan(index, calls, ["", "m"], {"": False, "m": False})
    assert plan.calls[1].outputs == {0: "p0", 1: "p1"}, (plan.calls[1].status, plan.calls[1].note)
