"""The accumulation counterfactual (onnx/edit/numerics/accumulate64.py, propose/numerics/accumulate64.py): ONNX Runtime's float32
reductions over many elements computed in float64, on real ONNX Runtime against real torch; when it is
proposed, and that it changes nothing else."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.numerics.accumulate64 import MIN_REDUCED, accumulate64_patches
from drifttui.core.onnx.edit.patches import PatchError, apply


def _model(op: str, shape: list[int], axes=None, opset: int = 18, elem=TensorProto.FLOAT) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.asarray(axes, np.int64), "axes")] if axes is not None else []
    node = helper.make_node(op, ["x", *(["axes"] if inits else [])], ["y"], name="red",
                            **({"keepdims": 1} if op.startswith("Reduce") else {}))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _level(shape: list[int]) -> np.ndarray:
    """values over a common level: the running float32 sum loses its low bits, torch's cascade does not."""
    return (np.random.default_rng(0).random(shape) + 300.0).astype(np.float32)


# ONNX reduction -> (input shape, axes, torch's computation)
CASES = {
    "ReduceMean": ([2, 65536], [-1], lambda t: t.mean(-1, keepdim=True)),
    "ReduceSum": ([2, 65536], [-1], lambda t: t.sum(-1, keepdim=True)),
    "GlobalAveragePool": ([1, 2, 256, 256], None, lambda t: torch.nn.functional.adaptive_avg_pool2d(t, 1)),
    "ReduceLogSumExp": ([2, 65536], [-1], lambda t: torch.logsumexp(t - 300.0, -1, keepdim=True)),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_reduction_in_float64_computes_torchs_float32_value_and_the_kernel_does_not(op):
    shape, axes, torch_fn = CASES[op]
    x = _level(shape) - (300.0 if op == "ReduceLogSumExp" else 0.0)
    model = _model(op, shape, axes)
    case = Case(model, {"x": x}, {"y": torch_fn(torch.from_numpy(x + (300.0 if op == "ReduceLogSumExp" else 0.0))
                                              ).numpy()}, "body", 0, 0, 1e-6, 1e-6, nodes=["red"], opset=18)
    if op == "ReduceLogSumExp":
        case.expected["y"] = torch.logsumexp(torch.from_numpy(x), -1, keepdim=True).numpy()
    patches = accumulate64_patches(case)
    assert len(patches) == 1 and patches[0].spec["rewrite"] == "accumulate_float64"
    assert (patches[0].check, patches[0].kind) == ("stability", "runtime") and "onnxruntime#28450" in patches[0].fix
    want = case.expected["y"]
    fixed = apply(model, patches[0])
    onnx.shape_inference.infer_shapes(fixed, strict_mode=True)          # the new nodes type-check
    got, before = _run(fixed, x), _run(model, x)
    assert got.dtype == np.float32 and np.abs(got - want).max() <= np.abs(before - want).max()
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()        # torch's rounding, to an ulp or two


def test_gap_at_an_older_opset_reads_its_axes_as_an_attribute():
    x = _level([1, 2, 128, 128])
    model = _model("GlobalAveragePool", [1, 2, 128, 128], opset=13)
    fixed = apply(model, accumulate64_patches(Case(model, {"x": x}, {}, "body", 0, 0, 1e-6, 1e-6))[0])
    assert np.allclose(_run(fixed, x), torch.from_numpy(x).mean((2, 3), keepdim=True).numpy(), rtol=1e-6)


def test_never_proposed_for_short_sums_or_float64_inputs():
    short = [2, MIN_REDUCED // 2]
    x = _level(short)
    model = _model("ReduceSum", short, [-1])
    assert accumulate64_patches(Case(model, {"x": x}, {}, "body", 0, 0, 1e-6, 1e-6)) == []
    x64 = _level([2, 65536]).astype(np.float64)
    model64 = _model("ReduceSum", [2, 65536], [-1], elem=TensorProto.DOUBLE)
    assert accumulate64_patches(Case(model64, {"x": x64}, {}, "body", 0, 0, 1e-6, 1e-6)) == []


def test_a_node_that_is_no_sum_is_refused():
    model = _model("ReduceMax", [2, 8], [-1])
    from drifttui.core.onnx.edit.patches import Patch
    with pytest.raises(PatchError, match="not a float32 sum"):
        apply(model, Patch({"op": "rewrite", "rewrite": "accumulate_float64", "node": "red"}, "stability", "", ""))


def _cumsum(n: int, axis: int = -1) -> onnx.ModelProto:
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], name="scan")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.asarray(axis, np.int64), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_long_cumsum_in_float64_computes_torchs_value_and_the_kernel_does_not():
    """torch's CPU cumsum accumulates float32 in double (pytorch/pytorch#180153), ONNX Runtime's CumSum in a
    running float32 sum: over 65536 steps of a level the last prefix sums are far apart."""
    x = _level([2, 65536])
    model = _cumsum(65536)
    want = torch.cumsum(torch.from_numpy(x), -1).numpy()
    case = Case(model, {"x": x}, {"y": want}, "body", 0, 0, 1e-6, 1e-6, nodes=["scan"], opset=18)
    patches = accumulate64_patches(case)
    assert len(patches) == 1 and patches[0].spec["nodes"] == ["scan"]
    assert patches[0].check == "stability" and "pytorch/pytorch#180153" in patches[0].fix
    assert "cumsum accumulates float32 in double" in patches[0].why
    before, got = _run(model, x), _run(apply(model, patches[0]), x)
    assert np.abs(before - want).max() > 1.0 and np.array_equal(got, want)


def test_a_short_cumsum_or_one_along_a_short_axis_is_never_widened():
    """Below MIN_SCANNED (32) steps no patch; from it one (batch I's 128-step running mean needed it: the partial
    sums' level, not only the length, decides what a float32 running sum loses)."""
    x = _level([2, 16])
    assert accumulate64_patches(Case(_cumsum(16), {"x": x}, {}, "body", 0, 0, 1e-6, 1e-6)) == []
    x = _level([2, 64])
    assert len(accumulate64_patches(Case(_cumsum(64), {"x": x}, {}, "body", 0, 0, 1e-6, 1e-6))) == 1
    x = _level([2, 65536])      # the scan runs along the axis of 2, not the long one
    assert accumulate64_patches(Case(_cumsum(65536, axis=0), {"x": x}, {}, "body", 0, 0, 1e-6, 1e-6)) == []


def _dft(n: int, window: bool = False) -> onnx.ModelProto:
    """A one-sided real DFT of an [1, n, 1] signal along axis 1 (opset 20: the axis an input), as the dynamo
    exporter writes torch.fft.rfft; or an STFT of frames of ``n`` with a Hann window."""
    if window:
        inits = [numpy_helper.from_array(np.asarray(n // 4, np.int64), "step"),
                 numpy_helper.from_array(np.hanning(n).astype(np.float32), "win"),
                 numpy_helper.from_array(np.asarray(n, np.int64), "len")]
        node = helper.make_node("STFT", ["x", "step", "win", "len"], ["y"], name="fft", onesided=1)
    else:
        inits = [numpy_helper.from_array(np.asarray(1, np.int64), "axis")]
        node = helper.make_node("DFT", ["x", "", "axis"], ["y"], name="fft", onesided=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


@pytest.mark.parametrize("window", [False, True], ids=["DFT", "STFT"])
def test_a_transform_of_a_length_not_a_power_of_two_in_float64_computes_torchs_value(window):
    """ONNX Runtime's DFT / STFT compute their twiddles in float32 and lose ~1e-4 on a length that is not a power
    of two (microsoft/onnxruntime#16163); torch's pocketfft does not: widened (the STFT's window too), the file
    computes torch's value."""
    n = 2000
    rng = np.random.default_rng(0)
    if window:
        x = rng.standard_normal((1, 4 * n)).astype(np.float32)
        t = torch.stft(torch.from_numpy(x), n, n // 4, window=torch.from_numpy(np.hanning(n).astype(np.float32)),
                       center=False, return_complex=True)
        want = torch.view_as_real(t).permute(0, 2, 1, 3).numpy()
    else:
        x = rng.standard_normal((1, n, 1)).astype(np.float32)
        want = torch.view_as_real(torch.fft.rfft(torch.from_numpy(x[..., 0]), dim=1)).numpy()
    model = _dft(n, window)
    case = Case(model, {"x": x}, {"y": want}, "body", 0, 0, 1e-6, 1e-6, nodes=["fft"], opset=20)
    patches = accumulate64_patches(case)
    assert len(patches) == 1 and patches[0].spec["nodes"] == ["fft"] and patches[0].check == "stability"
    assert "microsoft/onnxruntime#16163" in patches[0].fix and "twiddle" in patches[0].why
    before, got = _run(model, x), _run(apply(model, patches[0]), x)
    scale = np.abs(want).max()
    assert np.abs(before - want).max() > 1e-5 * scale and np.abs(got - want).max() < 1e-6 * scale


def test_a_transform_of_a_short_length_is_never_widened():
    x = np.random.default_rng(0).standard_normal((1, 32, 1)).astype(np.float32)
    assert accumulate64_patches(Case(_dft(32), {"x": x}, {}, "body", 0, 0, 1e-6, 1e-6, nodes=["fft"])) == []
