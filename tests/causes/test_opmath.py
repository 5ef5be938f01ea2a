"""The opmath counterfactual (onnx/edit/numerics/opmath.py, propose/numerics/opmath.py): a file's float16 nodes computed in float32
and rounded where torch rounds, on real ONNX Runtime against real torch (the TorchScript and dynamo exports of
small float16 modules); when it is proposed, and that the rewritten file still type-checks."""
from __future__ import annotations


import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.numerics.opmath import opmath_patches
from drifttui.core.onnx.edit.patches import apply
from tests.causes.exported_case import exported_case


class HalfVar(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.half() + 30.0).var(-1, keepdim=True).float()


class HalfShift(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.half() + 30.0).float()


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def _case(module: torch.nn.Module, exporter: str, tmp_path) -> tuple[onnx.ModelProto, Case, np.ndarray]:
    torch.manual_seed(0)
    return exported_case(module, torch.randn(64, 32), exporter, tmp_path)[:3]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_float16_variance_rewritten_computes_torchs_value_and_the_file_does_not(exporter, tmp_path):
    model, case, x = _case(HalfVar(), exporter, tmp_path)
    want = case.expected[model.graph.output[0].name]
    assert np.abs(_run(model, x) - want).max() > 1e-3          # the file: ~1% of the variance off
    patches = opmath_patches(case)
    assert patches and all(p.spec["rewrite"] == "opmath_float32" and p.check == "dtype" for p in patches)
    errors = {p.spec["form"]: float(np.abs(_run(apply(model, p), x) - want).max()) for p in patches}
    assert min(errors.values()) == 0.0, errors                  # one of them is torch's value, to the bit
    for p in patches:
        onnx.checker.check_model(apply(model, p), full_check=True)


def test_the_rounding_onnx_runtime_drops_is_kept(tmp_path):
    """``x.half() + 30``: ONNX Runtime removes the Cast pair around its float32 Add, so the sum of the float32 x
    is rounded; the per-op rewrite's explicit Casts keep torch's rounding of x first."""
    model, case, x = _case(HalfShift(), "dynamo", tmp_path)
    want = case.expected[model.graph.output[0].name]
    assert np.abs(_run(model, x) - want).max() > 0
    per_op = next(p for p in opmath_patches(case) if p.spec["form"] == "per_op")
    assert per_op.kind == "runtime" and "onnxruntime#8787" in per_op.why
    assert np.array_equal(_run(apply(model, per_op), x), want)


def test_a_float32_origin_gets_no_opmath_patch():
    node = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              initializer=[numpy_helper.from_array(np.asarray(1.0, np.float32), "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.ones((2, 3), np.float32)
    assert opmath_patches(Case(model, {"x": x}, {"y": x + 1}, "body", 0, 0, 1e-5, 1e-5, nodes=["add"])) == []


class HalfLogCumSumExp(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logcumsumexp((x * 4.0).half(), -1).float()


def test_one_float16_op_lowered_to_several_nodes_is_rounded_only_where_torch_rounds(tmp_path):
    """A float16 ``logcumsumexp`` (dynamo: ReduceMax, Sub, Exp, CumSum, Log, Add): torch computes it in float32 and
    rounds its result once.  Rounded at every node (per_op) the small Exp terms lose their digits; the ``whole``
    form (every node in float32, rounded at the model's own ``.half()`` and at the result) is torch's value."""
    model, case, x = _case(HalfLogCumSumExp(), "dynamo", tmp_path)
    want = case.expected[model.graph.output[0].name]
    patches = {p.spec["form"]: p for p in opmath_patches(case)}
    errors = {f: float(np.abs(_run(apply(model, p), x) - want).max()) for f, p in patches.items()}
    assert errors["per_op"] > 1e-4, errors
    assert errors["whole"] <= 1e-5 * np.abs(want).max(), errors
    whole = patches["whole"]
    assert whole.check == "dtype" and whole.kind == "export" and "rounds only its result" in whole.why
    onnx.checker.check_model(apply(model, whole), full_check=True)


class HalfCodes(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 8.0).clamp(-127.0, 127.0).half().to(torch.int8).float()


def _at(model: onnx.ModelProto, x: np.ndarray, level: str) -> np.ndarray:
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_float16_rounding_read_by_an_integer_cast_is_kept_in_the_file_repair_writes(exporter, tmp_path):
    """``(x * 8).half().to(torch.int8)``: ONNX Runtime merges ``Cast(float -> float16) -> Cast(float16 -> int8)``
    (RemoveDuplicateCastTransformer, at every level) and truncates the unrounded float.  The per-op rewrite's
    int8 Cast reads the explicitly rounded float32, a pair ONNX Runtime keeps: the file as ``repair`` writes it
    (pruned of unread nodes) computes torch's codes at every optimisation level."""
    from drifttui.core.onnx.edit.keep.float32 import without_views

    model, case, x = _case(HalfCodes(), exporter, tmp_path)
    want = case.expected[model.graph.output[0].name]
    assert np.abs(_run(model, x) - want).max() >= 1.0           # a code off where float16 rounds up to it
    per_op = next(p for p in opmath_patches(case) if p.spec["form"] == "per_op")
    fixed = without_views(apply(model, per_op))
    onnx.checker.check_model(fixed, full_check=True)
    for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"):
        assert np.array_equal(_at(fixed, x, level), want), level
