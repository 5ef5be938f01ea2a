"""Quantisation-aware training (QAT) forms: the model fake-quantises its own activations, and the exported QDQ file is
expected to compute torch's int8 codes.  A quantiser of the file whose scale and zero point are one of torch's
fake-quantise calls is torch's own (``core/prepare/qat.py``): no precision is lost relative to torch there, so the
layer is held to the float32 tolerance, not to an int8 budget (docs/deploy.md, "Quantisation-aware training").

* ``requant_average`` (deep, both exporters; screened in batch H, session 31, and not kept then: WITHIN BUDGET): the
  mean of two fake-quantised int8 activations re-quantised at the same scale.  The mean of two codes is a half-step
  tie wherever their sum is odd; torch rounds ``x * (1 / scale)``, ONNX Runtime's QuantizeLinear ``x / scale``, and
  at a tie the two round one step apart (the same mechanism as forms40h's ``channel_quant_shallow``);
* ``requant_offgrid`` (deep, clean control): the same model dividing by 2.3, off the tie grid;
* ``qat_linear`` (deep, clean control, TorchScript: the dynamo exporter refuses FakeQuantize's data-dependent
  ``observer_enabled`` branch): ``torch.ao.quantization.FakeQuantize`` modules, observers off, on a Linear's input,
  weight and output (a trained QAT model), exported as it is.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.ao.quantization import FakeQuantize

from tests.causes.forms30 import seeded_deep as _deep

WIDTH = 32
STEP = 0.1


def _fq(x: torch.Tensor, scale: float = STEP) -> torch.Tensor:
    return torch.fake_quantize_per_tensor_affine(x, scale, 0, -128, 127)


class RequantAverage(nn.Module):
    """QAT: the average of two fake-quantised int8 activations, re-quantised to the same scale."""

    def __init__(self, on_grid: bool = True) -> None:
        super().__init__()
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.on_grid = on_grid

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x) * 24.0
        a, b = _fq(h), _fq(h.flip(-1) if self.on_grid else h.flip(-1) * 1.37)
        return _fq((a + b) / 2 if self.on_grid else (a + b) / 2.3) * 4.0


def _fixed(scale: float) -> FakeQuantize:
    """A FakeQuantize whose observer is off and whose qparams are set (int8, symmetric around 0): a trained QAT
    model's quantiser."""
    fq = FakeQuantize(dtype=torch.qint8, quant_min=-128, quant_max=127)
    fq.disable_observer()
    fq.scale.copy_(torch.tensor([scale]))
    fq.zero_point.zero_()
    return fq


class QatLinear(nn.Module):
    """A QAT Linear: its input and its weight fake-quantised by FakeQuantize modules, its output too."""

    def __init__(self) -> None:
        super().__init__()
        self.inq = _fixed(0.05)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.wq = _fixed(0.004)
        self.outq = _fixed(0.08)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.linear(self.inq(x), self.wq(self.proj.weight), self.proj.bias)
        return self.outq(y)


def requant_average() -> nn.Module: return _deep(RequantAverage)                           # noqa: E704
def requant_offgrid() -> nn.Module: return _deep(lambda: RequantAverage(on_grid=False))    # noqa: E704
def qat_linear() -> nn.Module: return _deep(QatLinear)                                     # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
