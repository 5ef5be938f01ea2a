"""ONNX Runtime's CPU reads a float16 value unrounded between two nodes it runs in float32 (runtime/unrounded.py),
and the own-error graph and the origin's case keep such an edge wired (session 44, forms44o): a ``/ 255`` in float16
in the root module read by a child's ``amax`` (ReduceMax) unrounded and by its ``Split`` rounded."""
from __future__ import annotations

import numpy as np


def _graph():
    from onnx import TensorProto as T, helper as h

    nodes = [h.make_node("Cast", ["x"], ["xh"], to=T.FLOAT16, name="cast"),
             h.make_node("Div", ["xh", "k"], ["d"], name="div"),
             h.make_node("ReduceMax", ["d", "ax"], ["m"], keepdims=0, name="rmax"),
             h.make_node("Split", ["d"], ["r", "g", "b"], axis=1, num_outputs=3, name="split"),
             h.make_node("Squeeze", ["r", "ax"], ["rs"], name="sq"),
             h.make_node("Equal", ["m", "rs"], ["y"], name="eq")]
    inits = [h.make_tensor("k", T.FLOAT16, [], [np.float16(255.0).view(np.uint16).item()], raw=False),
             h.make_tensor("ax", T.INT64, [1], [1])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 4])],
                     [h.make_tensor_value_info("y", T.BOOL, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 20)])


def test_the_readers_onnx_runtime_feeds_a_float16_value_unrounded_are_named():
    from drifttui.core.runtime.unrounded import unrounded_reads

    reads = unrounded_reads(_graph(), {"xh", "d"})
    assert ("d", "rmax") in reads and ("d", "split") not in reads, reads
    # the file's own Cast to float16 removed with ORT's pair: Div reads x, the Cast's float32 source
    assert ("xh", "div") in reads, reads


def test_a_file_whose_weights_lie_outside_the_proto_is_asked_without_them(tmp_path):
    import onnx

    from drifttui.core.runtime.unrounded import unrounded_reads

    m = _graph()
    onnx.save(m, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.data", size_threshold=0)
    outside = onnx.load(str(tmp_path / "m.onnx"), load_external_data=False)
    assert ("d", "rmax") in unrounded_reads(outside, {"xh", "d"})


def test_nothing_is_asked_of_a_file_without_low_precision_values():
    from drifttui.core.runtime.unrounded import unrounded_reads

    assert unrounded_reads(_graph(), set()) == set()


def test_the_unrounded_read_changes_the_answer_onnx_runtime_gives():
    """the premise: torch (and the file's own types) say max == red for a pixel whose red is the max; ORT says no"""
    import onnxruntime as ort

    x = np.array([[[214.27, 10.0, 0.0, 3.0], [5.0, 7.0, 1.0, 2.0], [1.0, 2.0, 3.0, 1.0]]], np.float32)
    s = ort.InferenceSession(_graph().SerializeToString(), providers=["CPUExecutionProvider"])
    assert not s.run(None, {"x": x})[0][0, 0]


def test_onnx_runtime_is_asked_once_per_file_and_each_caller_keeps_its_values(monkeypatch):
    """prepare's own-error graph and the origin's case both read the answer: one session made, not two"""
    import drifttui.core.runtime.unrounded as unrounded
    from drifttui.core.onnx.graph import build_index

    asked = []
    real = unrounded.unrounded_reads
    monkeypatch.setattr(unrounded, "unrounded_reads", lambda *a: asked.append(a) or real(*a))
    index = build_index(_graph())
    assert unrounded.unrounded_reads_of(index, {"d"}) == {("d", "rmax")}
    assert unrounded.unrounded_reads_of(index, {"xh"}) == {("xh", "div")}
    assert unrounded.unrounded_reads_of(index, set()) == set()
    assert len(asked) == 1


def test_a_widening_cast_onnx_runtime_removes_is_an_unrounded_read():
    """``Div`` (no float16 kernel on ORT's CPU, run in float32) then the file's own ``Cast`` to float: ORT removes that
    Cast with the Cast back to float16 it inserted, and the float32 reader reads the Div's unrounded value (forms46z's
    ``periodic_amp``: an autocast Linear's Gemm, then a float32 periodic embedding, in the parent's call)."""
    from onnx import TensorProto, helper

    from drifttui.core.runtime.unrounded import unrounded_reads

    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Div", ["x", "y"], ["q"], name="div"),
             helper.make_node("Cast", ["q"], ["w"], name="widen", to=TensorProto.FLOAT),
             helper.make_node("Cos", ["w"], ["c"], name="cos")]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT16, [4]), vi("y", TensorProto.FLOAT16, [4])],
                          [vi("c", TensorProto.FLOAT, [4])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert ("q", "widen") in unrounded_reads(model, {"q"})
