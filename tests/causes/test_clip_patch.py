"""The clip_bounds rewrite on hand-made graphs, run in ONNX Runtime: the dtype of the clipped
value, opset-10 attributes, and a bound computed in the graph that must never be replaced."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.propose.edits.candidates import clip
from drifttui.core.onnx.edit.patches import Patch, apply


def _run(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _graph(dtype, opset, bounds="const"):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    # Abs, not Relu: ORT's Relu+Clip fusion fails on float64 bounds ("Unexpected data type for Clip 'min'")
    nodes = [helper.make_node("Abs", ["x"], ["r"], name="abs")]
    inits = []
    if opset < 11:
        nodes.append(helper.make_node("Clip", ["r"], ["y"], name="clip", min=0.0, max=1.5))
    elif bounds == "const":
        inits = [numpy_helper.from_array(np.array(0.0, dtype), "lo"), numpy_helper.from_array(np.array(1.5, dtype), "hi")]
        nodes.append(helper.make_node("Clip", ["r", "lo", "hi"], ["y"], name="clip"))
    else:       # the lower bound is computed in the graph
        inits = [numpy_helper.from_array(np.array(1.5, dtype), "hi")]
        nodes.insert(0, helper.make_node("ReduceMin", ["x"], ["lo"], name="min", keepdims=0))
        nodes.append(helper.make_node("Clip", ["r", "lo", "hi"], ["y"], name="clip"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, [4])],
                          [helper.make_tensor_value_info("y", elem, [4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _patch(spec):
    return Patch({"op": "rewrite", "node": "clip", "rewrite": "clip_bounds", **spec}, "op-compat", "", "")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_new_bounds_take_the_dtype_of_the_clipped_value(dtype):
    model = _graph(dtype, 13)
    x = np.array([-1.0, 0.5, 1.0, 3.0], dtype)
    assert _run(model, x).max() == 1.5
    out = _run(apply(model, _patch({"max": 0.75, "dtype": dtype})), x)
    assert out.dtype == np.dtype(dtype) and out.tolist() == [0.75, 0.5, 0.75, 0.75]


def test_opset_10_bounds_are_attributes():
    model = _graph("float32", 10)
    x = np.array([-1.0, 0.5, 1.0, 3.0], np.float32)
    out = _run(apply(model, _patch({"max": 0.75})), x)
    assert out.tolist() == [0.75, 0.5, 0.75, 0.75]
    assert _run(apply(model, _patch({"max": None})), x).tolist() == [1.0, 0.5, 1.0, 3.0]


def test_only_the_named_bound_changes():
    model = _graph("float32", 13)
    patched = apply(model, _patch({"max": 0.75}))
    assert list(patched.graph.node[-1].input)[:2] == ["r", "lo"]
    assert len(patched.graph.initializer) == len(model.graph.initializer) + 1


class _Case:
    module = "act"


def test_a_bound_computed_in_the_graph_is_never_replaced():
    import torch

    model = _graph("float32", 13, bounds="dynamic")
    node = model.graph.node[-1]
    consts = {"hi": np.array(1.5, np.float32)}
    types = {"r": TensorProto.FLOAT}
    specs = [p.spec for p in clip(_Case(), node, torch.nn.Hardtanh(-0.5, 0.75), consts, types)]
    assert specs and all("min" not in s for s in specs), specs
    assert specs[0]["max"] == 0.75 and specs[0]["dtype"] == "float32"
