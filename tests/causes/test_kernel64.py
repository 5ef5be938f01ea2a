"""The deviating kernel counterfactual (propose/numerics/kernel64.py): a node ONNX Runtime computes otherwise than the
ONNX reference implementation by its own error, far below the tolerance (units in the last place, a flush of
subnormal values to 0), and amplified by what reads it, run in float64.  Real ONNX Runtime against real torch on bare
graphs: ``Range`` (ONNX Runtime adds ``delta`` to a float32 running value; the spec and torch: ``start + i * delta``)
read by a phase, ``Softmax`` (ONNX Runtime flushes probabilities below float32's smallest normal number to 0) read by
a ``Log``, and a right kernel (MLAS's ``Tanh``, ~10 units off) that is not proposed."""
from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import localise
from drifttui.core.explain.causes.propose.numerics.kernel64 import deviating_kernels, kernel64_patches
from drifttui.core.onnx.edit.patches import apply
from tests.causes.ort_kernels import SOFTMAX_KEEPS, softmax_flushes

F = TensorProto.FLOAT


def _graph(nodes, inputs, output, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(output, F, None)], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def _run(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _case(model: onnx.ModelProto, feeds: dict, want: np.ndarray, nodes: list[str]) -> Case:
    return Case(model, feeds, {"y": want}, "body", 0, 0, 1e-4, 1e-4, nodes=nodes, opset=18)


def _range_phase() -> tuple[onnx.ModelProto, dict, np.ndarray]:
    """the times of 3000 frames at a 10 ms hop, ``Range(0, limit, 0.01)``, as the phase of a 4 Hz tone."""
    g = np.asarray(2 * math.pi * 4.0, np.float32)
    gain = numpy_helper.from_array(g, "gain")
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["t"], name="range"),
             helper.make_node("Mul", ["t", "gain"], ["phase"], name="mul"),
             helper.make_node("Sin", ["phase"], ["y"], name="sin")]
    model = _graph(nodes, [("start", []), ("limit", []), ("delta", [])], "y", [gain])
    feeds = {"start": np.asarray(0.0, np.float32), "limit": np.asarray(29.995, np.float32),
             "delta": np.asarray(0.01, np.float32)}
    want = torch.sin(torch.arange(0.0, 29.995, float(feeds["delta"])) * float(g)).numpy()
    return model, feeds, want


def _log_softmax_written() -> tuple[onnx.ModelProto, dict, np.ndarray]:
    """``log(softmax(z))`` of rows whose logits lie 88 .. 100 below their largest: subnormal probabilities in torch."""
    nodes = [helper.make_node("Softmax", ["z"], ["p"], name="softmax", axis=-1),
             helper.make_node("Log", ["p"], ["y"], name="log")]
    model = _graph(nodes, [("z", [2, 4])], "y")
    z = np.asarray([[0.0, -88.5, -95.0, -3.0], [0.0, -99.0, -1.0, -2.0]], np.float32)
    return model, {"z": z}, torch.log(torch.softmax(torch.from_numpy(z), -1)).numpy()


def test_the_range_kernels_running_sum_is_found_by_its_own_error_and_computed_in_float64():
    model, feeds, want = _range_phase()
    before = _run(model, feeds)
    assert np.abs(before - want).max() > 1e-2              # the phase amplifies the running sum's error
    case = _case(model, feeds, want, ["range", "mul", "sin"])
    loc = localise(case)
    assert loc.kind == "runtime"                           # the reference computes start + i * delta, as torch
    off = deviating_kernels(loc)
    assert [e["node"] for e in off] == ["range"] and off[0]["own_ulps"] >= 64
    [patch] = kernel64_patches(case, loc)
    assert (patch.check, patch.kind, patch.spec["rewrite"], patch.nodes) == ("op-compat", "runtime", "kernel_float64",
                                                                              ["range"])
    assert "Range kernel" in patch.why and "units in the last place" in patch.why and "step by step" in patch.why
    fixed = apply(model, patch)
    onnx.shape_inference.infer_shapes(fixed, strict_mode=True)
    got = _run(fixed, feeds)
    assert got.dtype == np.float32 and np.abs(got - want).max() < 1e-4


def test_a_softmax_that_flushes_subnormal_probabilities_is_computed_in_float64():
    if not softmax_flushes():
        pytest.skip(SOFTMAX_KEEPS)
    model, feeds, want = _log_softmax_written()
    before = _run(model, feeds)
    assert np.isinf(before).any() and np.isfinite(want).all()      # log(0) where torch keeps a subnormal p
    case = _case(model, feeds, want, ["softmax", "log"])
    loc = localise(case)
    off = deviating_kernels(loc)
    assert [e["node"] for e in off] == ["softmax"] and off[0]["flushed"] == 3
    [patch] = kernel64_patches(case, loc)
    assert "flush to zero" in patch.why and "step by step" not in patch.why and patch.check == "op-compat"
    got = _run(apply(model, patch), feeds)
    assert np.isfinite(got).all() and np.abs(got - want).max() < 1e-3 * np.abs(want).max()


def test_a_right_kernel_a_few_units_off_is_not_proposed():
    """MLAS's Tanh is ~10 units off the reference near 1e-3: a right kernel's rounding, amplified or not."""
    scale = numpy_helper.from_array(np.asarray(1e4, np.float32), "scale")
    nodes = [helper.make_node("Tanh", ["x"], ["t"], name="tanh"), helper.make_node("Mul", ["t", "scale"], ["y"],
                                                                                    name="mul")]
    model = _graph(nodes, [("x", [64])], "y", [scale])
    x = np.linspace(1e-3, 2e-3, 64, dtype=np.float32)
    want = (torch.tanh(torch.from_numpy(x)) * 1e4).numpy()
    case = Case(model, {"x": x}, {"y": want}, "body", 0, 0, 1e-9, 1e-9, nodes=["tanh", "mul"], opset=18)
    loc = localise(case)
    assert all(e["own_ulps"] < 64 for e in loc.own_errors)
    assert deviating_kernels(loc) == [] and kernel64_patches(case, loc) == []


def test_a_kernel_the_runtime_workarounds_rewrite_is_left_to_them():
    """ONNX Runtime's Sigmoid returns 0 from -20 down (its own error: a flush of torch's subnormal values, and far off
    before): the catalogue's ``log_sigmoid`` / ``safe_sigmoid`` forms tell it, no float64 kernel is proposed."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"), helper.make_node("Log", ["s"], ["y"], name="log")]
    model = _graph(nodes, [("x", [4])], "y")
    x = np.asarray([-30.0, -60.0, -85.0, 1.0], np.float32)
    want = torch.log(torch.sigmoid(torch.from_numpy(x))).numpy()
    case = _case(model, {"x": x}, want, ["sigmoid", "log"])
    loc = localise(case)
    assert [e["node"] for e in deviating_kernels(loc)] == ["sigmoid"]
    assert kernel64_patches(case, loc) == []
