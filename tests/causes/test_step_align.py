"""The node a verified re-export says is wrong (``locate/localise_nodes.align``) when the values part at a step (a
``Sign``, a comparison, a rounding): the fuzzer's source-derived pool, seed 34115, TorchScript:
``pairwise_distance(x, x, p=1, eps=1e-6) |> sign``.  The exporter drops the eps, the norm is 0 where torch's is
8e-6, within the absolute tolerance, and ``Sign`` makes 0 of it where torch makes 1: the story blamed ``Sign`` ("in
torch's sign"), whose lowering is right.  Matched without the absolute tolerance the values part at the norm's
``ReduceSum``, in the Sign's cone: that node is named.  A step whose inputs agree wholly is still the one blamed."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.localise_nodes import align


def _model(step: str) -> object:
    mk = helper.make_node
    nodes = [mk("Sub", ["x", "x"], ["d"], name="sub"), mk("ReduceSum", ["d", "axes"], ["s"], name="sum", keepdims=1),
             mk(step, ["s"] if step == "Sign" else ["s", "zero"], ["y"], name="step")]
    vi = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(np.asarray([1], np.int64), "axes"),
             numpy_helper.from_array(np.asarray(0.0, np.float32), "zero")]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [6, 8])], [vi("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _witness(norm: float, step: str) -> dict[str, np.ndarray]:
    s = np.full((6, 1), norm, np.float32)
    y = np.sign(s) if step == "Sign" else s > 0
    return {"w_d": np.zeros((6, 8), np.float32), "w_e": np.full((6, 8), 1e-6, np.float32), "w_s": s, "w_y": y}


def _vals(step: str) -> dict[str, np.ndarray]:
    s = np.zeros((6, 1), np.float32)
    return {"d": np.zeros((6, 8), np.float32), "s": s, "y": np.sign(s) if step == "Sign" else s > 0}


def test_a_step_fed_a_value_within_the_absolute_tolerance_names_its_producer():
    x = {"x": np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)}
    for step in ("Sign", "Greater"):
        node = align(_model(step), _vals(step), x, _witness(8e-6, step), ["w_y"], 1e-4, 1e-4)
        assert node is not None and node.name == "sum", step


def test_a_step_whose_inputs_agree_is_blamed():
    x = {"x": np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)}
    vals = _vals("Sign")
    vals["y"] = np.ones((6, 1), np.float32) * 2          # the step itself computes otherwise
    node = align(_model("Sign"), vals, x, _witness(0.0, "Sign") | {"w_y": np.ones((6, 1), np.float32)}, ["w_y"],
                 1e-4, 1e-4)
    assert node is not None and node.name == "step"
