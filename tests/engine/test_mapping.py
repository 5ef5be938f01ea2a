"""Mapping on graphs built with onnx.helper: scopes, repeated calls, fill-in, no-scope files."""
from onnx import TensorProto, helper

from drifttui.core.runtime.torch_hooks import Call, TensorRef
from drifttui.core.onnx.graph import DYNAMO, TORCHSCRIPT, UNKNOWN, build_index
from drifttui.core.prepare.plan.mapping import build_plan
from tests.engine.graphs import scoped_node as _node


def _model(nodes, inputs=("x",), outputs=("y",)):
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 4])
    g = helper.make_graph(nodes, "g", [vi(i) for i in inputs], [vi(o) for o in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _call(i, module, call, depth, parent, cls="M", inputs=None):
    ref = TensorRef((2, 4), "float32")
    return Call(i, module, cls, call, depth, parent,
                inputs=inputs if inputs is not None else [TensorRef((2, 4), "float32")], outputs=[ref])


def test_dynamo_back_to_back_calls_are_split_and_scopeless_nodes_filled():
    nodes = [
        _node("Tanh", ["x"], ["t0"], "n0", ["", "act", "tanh"]),
        _node("Tanh", ["t0"], ["t1"], "n1", ["", "act", "tanh_1"]),
        _node("Neg", ["t1"], ["t2"], "opt_made"),                      # optimiser-made: no metadata
        _node("Relu", ["t2"], ["y"], "n3", ["", "out", "relu"]),
    ]
    index = build_index(_model(nodes))
    assert index.flavour == DYNAMO
    assert index.nodes[2].scope == [] and index.nodes[2].scope_filled
    calls = [_call(0, "", 0, 0, None), _call(1, "act", 0, 1, 0), _call(2, "act", 1, 1, 0), _call(3, "out", 0, 1, 0)]
    plan = build_plan(index, calls, ["", "act", "out"], {"": False, "act": False, "out": False})
    assert plan.calls[1].outputs == {0: "t0"}
    assert plan.calls[2].outputs == {0: "t1"}
    assert plan.calls[3].outputs == {0: "y"}
    assert plan.node_call[2] == 0         # the Neg belongs to the root's own nodes
    # the Neg's output feeds "out": paired as out's input (a functional-op value)
    assert plan.table["t2"] == ("in", 3, 0)


def test_torchscript_paths_through_modulelist_and_call_suffix():
    nodes = [
        _node("Tanh", ["x"], ["a"], "/layers.0/act/Tanh"),
        _node("Tanh", ["a"], ["b"], "/layers.0/act_1/Tanh"),
        _node("Relu", ["b"], ["y"], "/layers.1/Relu"),
    ]
    index = build_index(_model(nodes))
    assert index.flavour == TORCHSCRIPT
    names = ["", "layers", "layers.0", "layers.0.act", "layers.1"]
    calls = [_call(0, "", 0, 0, None), _call(1, "layers.0", 0, 1, 0), _call(2, "layers.0.act", 0, 2, 1),
             _call(3, "layers.0.act", 1, 2, 1), _call(4, "layers.1", 0, 1, 0)]
    plan = build_plan(index, calls, names, {n: False for n in names})
    assert plan.calls[2].outputs == {0: "a"}
    assert plan.calls[3].outputs == {0: "b"}
    assert plan.calls[1].outputs == {0: "b"}       # the container's boundary output
    assert plan.calls[4].outputs == {0: "y"}
    assert plan.table["b"][1] == 3                  # the deeper call owns the shared value


def test_file_without_scopes_maps_outputs_only():
    nodes = [_node("Relu", ["x"], ["y"], "")]
    index = build_index(_model(nodes))
    assert index.flavour == UNKNOWN
    calls = [_call(0, "", 0, 0, None), _call(1, "act", 0, 1, 0)]
    plan = build_plan(index, calls, ["", "act"], {"": False, "act": False})
    assert not plan.localized and "no module scopes" in plan.reason
    assert plan.calls[0].outputs == {0: "y"}
    assert plan.calls[1].status == "unmapped"


def test_module_without_nodes_is_fused_or_not_exported():
    w = helper.make_tensor("conv.weight", TensorProto.FLOAT, [4, 4], [0.0] * 16)
    nodes = [_node("MatMul", ["x", "conv.weight"], ["m"], "n0", ["", "bn", "matmul"]),
             _node("Relu", ["m"], ["y"], "n1", ["", "bn", "relu"])]
    model = _model(nodes)
    model.graph.initializer.append(w)
    index = build_index(model)
    calls = [_call(0, "", 0, 0, None), _call(1, "conv", 0, 1, 0), _call(2, "drop", 0, 1, 0),
             _call(3, "bn", 0, 1, 0), _call(4, "head", 0, 1, 0)]
    calls[1].params = [("conv.weight", "parameter", (4, 4), "float32")]
    calls[4].params = [("head.weight", "parameter", (4, 4), "float32")]
    has = {"": False, "conv": True, "drop": False, "bn": True, "head": True}
    plan = build_plan(index, calls, ["", "conv", "drop", "bn", "head"], has)
    assert plan.calls[1].status == "fused" and "bn" in plan.calls[1].note      # its weight feeds bn's node
    assert plan.calls[2].status == "not_exported"                              # no params, no node
    assert plan.calls[4].status == "not_exported" and "removed" in plan.calls[4].note   # dead code
    assert plan.calls[3].outputs == {0: "y"}


def test_torchscript_call_suffixes_give_the_call_order_not_the_files_node_order():
    """ORT basic re-sorts a UNet's nodes: the time embedding's SiLU (a ResNet block's second call of its
    `nonlinearity`, `nonlinearity_1`) comes before the first call's nodes.  Each call keeps its own nodes
    (before: both calls unmapped, each paired with the other's shapes)."""
    vi = lambda n, shape: helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
    nodes = [_node("Tanh", ["t"], ["b"], "/blk/act_1/Tanh"),      # the second call, first in the file
             _node("Tanh", ["x"], ["a"], "/blk/act/Tanh"),
             _node("Add", ["a", "b"], ["y"], "/blk/Add")]
    g = helper.make_graph(nodes, "g", [vi("x", [2, 4]), vi("t", [1, 4])], [vi("y", [2, 4])])
    index = build_index(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    assert index.flavour == TORCHSCRIPT
    names = ["", "blk", "blk.act"]
    calls = [_call(0, "", 0, 0, None), _call(1, "blk", 0, 1, 0), _call(2, "blk.act", 0, 2, 1),
             Call(3, "blk.act", "M", 1, 2, 1, inputs=[TensorRef((1, 4), "float32")],
                  outputs=[TensorRef((1, 4), "float32")])]
    plan = build_plan(index, calls, names, {n: False for n in names})
    assert plan.calls[2].outputs == {0: "a"}, (plan.calls[2].status, plan.calls[2].note)
    assert plan.calls[3].outputs == {0: "b"}, (plan.calls[3].status, plan.calls[3].note)
