"""torch's quantisation in a QDQ file (onnx/edit/lowerings/quantize_torch.py, propose/edits/quantize_torch.py): torch's fake
quantisation rounds ``x * (1 / scale)``, ONNX's QuantizeLinear ``x / scale``; on a half-step grid some values round
apart.  On real torch exports run by ONNX Runtime: the rewrite gives torch's values to the bit, per tensor and per
channel, with both exporters; it is proposed only where the case's values show the difference."""
from __future__ import annotations


import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.quantize_torch import quantize_patches
from drifttui.core.onnx.edit.patches import apply
from tests.causes.exported_case import exported_case


class GridQuant(torch.nn.Module):
    """fake quantisation at scale 0.1 of values on a 0.05 grid (ties), per tensor or per channel of a 4-D map."""

    def __init__(self, channel: bool, grid: bool = True) -> None:
        super().__init__()
        self.channel, self.grid = channel, grid

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.round(x * 20.0) / 20.0 if self.grid else x
        if self.channel:
            return torch.fake_quantize_per_channel_affine(g, torch.full((8,), 0.1), torch.zeros(8, dtype=torch.int32),
                                                          1, -128, 127)
        return torch.fake_quantize_per_tensor_affine(g, 0.1, 0, -128, 127)


def _case(module: torch.nn.Module, exporter: str, tmp_path) -> tuple[onnx.ModelProto, Case, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    return exported_case(module, torch.randn(4, 8, 6, 6) * 4.0, exporter, tmp_path)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("channel", [False, True])
def test_the_rewritten_quantize_is_torchs_to_the_bit(exporter, channel, tmp_path):
    model, case, x, want = _case(GridQuant(channel), exporter, tmp_path)
    assert np.abs(_run(model, x) - want).max() > 0.09          # a tie rounded apart: one step of 0.1
    (patch,) = quantize_patches(case)
    assert patch.check == "lowering" and patch.spec["rewrite"] == "quantize_reciprocal"
    fixed = apply(model, patch)
    onnx.checker.check_model(fixed, full_check=True)
    assert np.array_equal(_run(fixed, x), want)


def test_no_patch_where_the_case_shows_no_difference(tmp_path):
    _, case, _, _ = _case(GridQuant(True, grid=False), "torchscript", tmp_path)
    assert quantize_patches(case) == []


class SharedQparams(torch.nn.Module):
    """a QAT residual requantised at its skip's scale: two equal scale buffers and a shared zero-point buffer, which
    the TorchScript exporter writes once and reads through Identity nodes (forms45s ``residual_requant``)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("skip", torch.tensor([0.04]))
        self.register_buffer("branch", torch.tensor([0.05]))
        self.register_buffer("out", torch.tensor([0.04]))
        self.register_buffer("zero", torch.zeros(1, dtype=torch.int32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fq = torch.fake_quantize_per_tensor_affine
        a, b = fq(x, self.skip, self.zero, -128, 127), fq(x.flip(-1) * 1.3, self.branch, self.zero, -128, 127)
        return fq(a + b, self.out, self.zero, -128, 127)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_zero_point_read_through_an_identity_is_rewritten(exporter, tmp_path):
    torch.manual_seed(0)
    model, case, x, want = exported_case(SharedQparams(), torch.randn(6, 32) * 2.0, exporter, tmp_path)
    assert np.abs(_run(model, x) - want).max() > 0.03          # ties rounded apart: one step of 0.04
    (patch,) = quantize_patches(case)
    fixed = apply(model, patch)
    onnx.checker.check_model(fixed, full_check=True)
    assert np.array_equal(_run(fixed, x), want)
