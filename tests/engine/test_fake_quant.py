"""The model's own quantisation (core/runtime/fake_quant.py): every way PyTorch fake-quantises is recorded with the
scale and zero point it rounded with, a float model records nothing, and (core/prepare/qat.py) a QDQ file's
quantizers are the model's own exactly when those parameters are one of the recorded calls."""
from __future__ import annotations

import warnings

import onnx
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers torch.ops.quantized_decomposed (PT2E)
from torch import nn

from drifttui.core.onnx.graph import build_index
from drifttui.core.prepare.qat import torch_quantizers
from drifttui.core.runtime.fake_quant import FakeQuant, recorded


def _fq_module(scale: float, per_channel: bool = False) -> nn.Module:
    if per_channel:
        fq = torch.ao.quantization.FakeQuantize(
            observer=torch.ao.quantization.MovingAveragePerChannelMinMaxObserver, dtype=torch.qint8, quant_min=-128,
            quant_max=127, qscheme=torch.per_channel_symmetric, ch_axis=0)
        fq(torch.randn(4, 8))         # the observer sizes its per-channel qparams
        fq.scale.copy_(torch.full((4,), scale))
        fq.zero_point.zero_()
    else:
        fq = torch.ao.quantization.FakeQuantize(dtype=torch.qint8, quant_min=-128, quant_max=127)
        fq.scale.copy_(torch.tensor([scale]))
        fq.zero_point.zero_()
    fq.disable_observer()
    return fq


def _recorded(fn) -> list[FakeQuant]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad(), recorded() as found:
            fn()
    return found


def test_every_way_torch_fake_quantises_is_recorded_with_its_scale_and_zero_point():
    x = torch.randn(4, 8)
    scales = torch.tensor([0.1, 0.2, 0.3, 0.4])
    per_tensor, per_channel = _fq_module(0.05), _fq_module(0.25, per_channel=True)
    found = _recorded(lambda: [
        torch.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127),
        torch.fake_quantize_per_channel_affine(x, scales, torch.zeros(4, dtype=torch.int32), 0, -128, 127),
        per_tensor(x),
        per_channel(x),
        torch.quantize_per_tensor(x, 0.125, 7, torch.quint8).dequantize(),
        torch.ops.quantized_decomposed.quantize_per_tensor.default(x, 0.5, 0, -128, 127, torch.int8),
    ])
    f32 = lambda v: float(torch.tensor(v, dtype=torch.float32))        # noqa: E731
    assert found == [
        FakeQuant((f32(0.1),), (3,)),
        FakeQuant(tuple(f32(s) for s in scales.tolist()), (0, 0, 0, 0), 0),
        FakeQuant((f32(0.05),), (0,)),
        FakeQuant((f32(0.25),) * 4, (0,) * 4, 0),
        FakeQuant((0.125,), (7,)),
        FakeQuant((0.5,), (0,)),
    ]


def test_a_float_model_records_nothing_and_a_disabled_recorder_watches_nothing():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    assert _recorded(lambda: model(torch.randn(3, 8))) == []
    with recorded(False) as found:
        torch.fake_quantize_per_tensor_affine(torch.randn(3), 0.1, 0, -128, 127)
    assert found == []


class _Qat(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fake_quantize_per_tensor_affine(self.fc(x), 0.05, 0, -128, 127)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_qdq_files_quantizers_are_the_models_own_only_at_the_recorded_parameters(tmp_path, exporter):
    torch.manual_seed(0)
    model, x = _Qat().eval(), torch.randn(2, 8)
    path = tmp_path / "qat.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=exporter == "dynamo")
    index = build_index(onnx.load(str(path)), str(path))
    qdq = {n.index for n in index.nodes if n.op_type in ("QuantizeLinear", "DequantizeLinear")}
    assert len(qdq) == 2
    assert torch_quantizers(index, _recorded(lambda: model(x))) == qdq
    # another scale, or another zero point, is not the model's quantisation: the file's quantizer keeps its budget
    assert torch_quantizers(index, [FakeQuant((0.0501,), (0,)), FakeQuant((0.05,), (1,))]) == frozenset()
    assert torch_quantizers(index, []) == frozenset()
