"""graft.py on hand-made graphs run in ONNX Runtime: the origin's nodes replaced by another graph,
names kept unique, a value the origin shares with a later node kept, opsets reconciled."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from drifttui.core.onnx.edit.graft.splice import Graft, GraftError, graft


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


def test_a_scale_a_fusion_moved_is_recomputed_before_the_graft():
    """``Graft.scaled``: the call's input is the file's ``h`` times 1.5 (ORT folded that scale into a fused node of
    the call): a scope-less Mul recomputes it, the graft reads it, and ``h`` itself is still the file's."""
    fixed = graft(_full(share=False), Graft(_sub(), ["h"], ["o"], ["/o/Mul", "/o/Add"], scaled={0: 1.5}))
    onnx.checker.check_model(fixed)
    np.testing.assert_allclose(_run(fixed, X)[0], -(np.maximum(X, 0) * 1.5 * 2 + 1))
    mul = [n for n in fixed.graph.node if n.name.startswith("unfused_scale")]
    assert len(mul) == 1 and mul[0].input[0] == "h" and not mul[0].name.startswith("/")


def test_torchscript_children_of_a_graft_are_named_under_their_own_scopes():
    """The anchor may be a child's node (``/body/lin/MatMul/MatMulAddFusion``, a file ORT optimised): each grafted
    node is named under the origin's path, then its own module's path below the origin."""
    from drifttui.core.onnx.edit.graft.scopes import torchscript_scope

    anchor = "/body/lin/MatMul/MatMulAddFusion"
    assert torchscript_scope(anchor, "body", (["bias"], "Add")) == "/body/bias/"
    assert torchscript_scope(anchor, "body", (["lin", "lin.sub"], "MatMul")) == "/body/lin/sub/"
    assert torchscript_scope(anchor, "body", ([], "Mul")) == "/body/"
    assert torchscript_scope("/body_1/Mul", "body", (["lin"], "MatMul")) == "/body_1/lin/"
    assert torchscript_scope("/layers/layers.0/attn/MatMul", "layers.0", (["attn"], "MatMul")) == "/layers/layers.0/attn/"
    assert torchscript_scope("node_mul", "body", (["lin"], "MatMul")) is None       # a dynamo name: metadata
    assert torchscript_scope("/head/MatMul", "body", (["lin"], "MatMul")) is None   # does not name the origin


def test_a_held_input_is_the_value_or_one_scalar_times_it():
    from drifttui.core.explain.causes.propose.reexport.held_inputs import scale_of

    rng = np.random.default_rng(0)
    h = rng.standard_normal((2, 6, 32)).astype(np.float32)
    assert scale_of(h, h.copy(), 1e-4, 1e-4) == 1.0
    assert scale_of(h, h * np.float32(3.0), 1e-4, 1e-4) == 3.0
    assert scale_of(h, h * np.float32(-0.3), 1e-4, 1e-4) == -0.3
    assert scale_of(h, h + 0.01, 1e-4, 1e-4) is None                     # not a scalar multiple
    assert scale_of(h, rng.standard_normal(h.shape).astype(np.float32), 1e-4, 1e-4) is None
    assert scale_of(h, np.full(h.shape, 1e-6, np.float32), 1e-4, 1e-4) is None   # near-zeros fit nothing
    assert scale_of(h, h.reshape(12, 32), 1e-4, 1e-4) is None            # another shape


def test_a_re_export_is_cut_only_where_the_cut_separates_it():
    """narrow_graft._cut: the nodes the outputs need once a value is the input; None when they also read another
    graph input (the cut does not separate)."""
    from drifttui.core.explain.causes.propose.reexport.narrow_graft import _cut

    def model(skip):
        nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
                 helper.make_node("Mul", ["a", "three"], ["b"], name="mul"),
                 helper.make_node("Add", ["b", "x" if skip else "one"], ["y"], name="add")]
        inits = [numpy_helper.from_array(np.array(3.0, np.float32), "three"),
                 numpy_helper.from_array(np.array(1.0, np.float32), "one")]
        g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", 1, [4])],
                              [helper.make_tensor_value_info("y", 1, [4])], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

    cut = _cut(model(False), "a", np.dtype(np.float32))
    assert [n.name for n in cut.graph.node] == ["mul", "add"] and [i.name for i in cut.graph.input] == ["a"]
    sess = ort.InferenceSession(cut.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"a": X})[0], X * 3 + 1)
    assert _cut(model(True), "a", np.dtype(np.float32)) is None


def _one_node(op: str):
    """A re-export of one node, fed and read by the file only: none of its values is the graft's own."""
    g = helper.make_graph([helper.make_node(op, ["inp"], ["out"], name="node_act")], "sub",
                          [helper.make_tensor_value_info("inp", 1, [4])], [helper.make_tensor_value_info("out", 1, [4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_two_one_node_grafts_in_one_file_keep_node_names_unique():
    """An origin and its sibling repaired by the same one-node re-export (a dynamo file, no scopes): the second
    graft had no value of the first's prefix to see, took the same prefix, and the file had two nodes named
    ``drifttui_graft/node_act``, which ONNX Runtime refuses."""
    nodes = [helper.make_node("HardSigmoid", ["x"], ["a"], name="node_a"),
             helper.make_node("HardSigmoid", ["a"], ["y"], name="node_b")]
    g = helper.make_graph(nodes, "full", [helper.make_tensor_value_info("x", 1, [4])],
                          [helper.make_tensor_value_info("y", 1, [4])])
    full = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    once = graft(full, Graft(_one_node("Sigmoid"), ["x"], ["a"], ["node_a"]))
    twice = graft(once, Graft(_one_node("Sigmoid"), ["a"], ["y"], ["node_b"]))
    names = [n.name for n in twice.graph.node]
    assert len(names) == len(set(names)), names
    s = 1 / (1 + np.exp(-X))
    np.testing.assert_allclose(_run(twice, X)[0], 1 / (1 + np.exp(-s)), rtol=1e-6)
