"""The NaN-propagating rewrite of a selection op (onnx/edit/lowerings/nan_select.py) and when it is proposed
(propose/edits/nan_select.py), on real ONNX Runtime against real torch."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.nan_select import nan_select_patches
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply


def _x(nan: bool = True) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    if nan:
        x[x < -1.0] = np.nan
        x[0, 0, 0] = np.nan         # a leading NaN too (ORT keeps that one)
    return x


def _model(op: str, attrs: dict, axes=None, out=TensorProto.FLOAT, opset: int = 18, elem=TensorProto.FLOAT) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.asarray(axes, np.int64), "axes")] if axes is not None else []
    node = helper.make_node(op, ["x", *(["axes"] if inits else [])], ["y"], name="sel", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, [2, 3, 8])],
                              [helper.make_tensor_value_info("y", out, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


_I64 = TensorProto.INT64
CASES = {   # ONNX node -> what torch computes
    "MaxPool": (lambda: _model("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
                lambda t: F.max_pool1d(t, 3, 2, 1)),
    "GlobalMaxPool": (lambda: _model("GlobalMaxPool", {}), lambda t: F.adaptive_max_pool1d(t, 1)),
    "ReduceMax-18": (lambda: _model("ReduceMax", {"keepdims": 1}, [-1]), lambda t: t.amax(-1, keepdim=True)),
    "ReduceMax-13": (lambda: _model("ReduceMax", {"keepdims": 0, "axes": [1]}, opset=13), lambda t: t.amax(1)),
    "ReduceMin": (lambda: _model("ReduceMin", {"keepdims": 0}, [2]), lambda t: t.amin(2)),
    "ArgMax-18": (lambda: _model("ArgMax", {"axis": -1, "keepdims": 0}, out=_I64), lambda t: t.argmax(-1)),
    "ArgMax-13": (lambda: _model("ArgMax", {"axis": 1, "keepdims": 1}, out=_I64, opset=13),
                  lambda t: t.argmax(1, keepdim=True)),
    "ArgMin": (lambda: _model("ArgMin", {"axis": 2, "keepdims": 1}, out=_I64), lambda t: t.argmin(2, keepdim=True)),
}
PATCH = Patch({"op": "rewrite", "rewrite": "nan_propagate", "node": "sel"}, "op-compat", "", "", "runtime")


@pytest.mark.parametrize("op", list(CASES))
def test_the_rewritten_op_computes_what_torch_computes_on_nan_and_nothing_else_changes(op):
    make, torch_fn = CASES[op]
    for nan in (True, False):
        x = _x(nan)
        want = torch_fn(torch.from_numpy(x)).numpy()
        before, model = make(), apply(make(), PATCH)
        onnx.shape_inference.infer_shapes(model, strict_mode=True)       # the new nodes type-check
        assert np.array_equal(_run(model, x), want, equal_nan=True), op
        assert np.array_equal(_run(before, x), want, equal_nan=True) is not nan     # ORT skips the NaN


def test_an_integer_input_is_refused():
    with pytest.raises(PatchError, match="not a float"):
        apply(_model("ArgMax", {"axis": 1}, out=_I64, elem=TensorProto.INT64), PATCH)


def _case(model: onnx.ModelProto, x: np.ndarray, expected: np.ndarray) -> Case:
    return Case(model, {"x": x}, {"y": expected}, "body", 0, 0, 1e-5, 1e-5, nodes=["sel"], opset=18)


def test_proposed_where_the_input_holds_nan_and_torch_disagrees():
    x = _x()
    patches = nan_select_patches(_case(CASES["ArgMax-18"][0](), x, torch.from_numpy(x).argmax(-1).numpy()), None)
    assert [p.spec for p in patches] == [PATCH.spec]
    assert (patches[0].check, patches[0].kind) == ("op-compat", "runtime") and "nan_to_num" in patches[0].fix


def test_never_proposed_without_nan_in_the_input_or_where_torch_agrees_with_the_file():
    model = CASES["ReduceMax-18"][0]()
    x = _x(nan=False)
    assert nan_select_patches(_case(model, x, torch.from_numpy(x).amax(-1, keepdim=True).numpy()), None) == []
    x = _x()
    agrees = _run(model, x)         # torch's value known and equal to the file's: the NaN does not matter here
    assert nan_select_patches(_case(model, x, agrees), None) == []


def test_two_selection_nodes_fed_the_same_nan_get_a_joint_rewrite_that_computes_torchs_max():
    axes = numpy_helper.from_array(np.asarray([-1], np.int64), "axes")
    nodes = [helper.make_node("ReduceMax", ["x", "axes"], ["v"], name="vals", keepdims=0),
             helper.make_node("ArgMax", ["x"], ["i"], name="idx", axis=-1, keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
                              [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("i", _I64, None)], initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = _x()
    want = torch.max(torch.from_numpy(x), -1)
    case = Case(model, {"x": x}, {"v": want.values.numpy(), "i": want.indices.numpy()}, "body", 0, 0, 1e-5, 1e-5)
    patches = nan_select_patches(case, None)
    joint = patches[-1]
    assert joint.spec["nodes"] == ["vals", "idx"] and len(patches) == 3
    sess = ort.InferenceSession(apply(model, joint).SerializeToString(), providers=["CPUExecutionProvider"])
    v, i = sess.run(None, {"x": x})
    assert np.array_equal(v, want.values.numpy(), equal_nan=True) and np.array_equal(i, want.indices.numpy())
