"""Held-out forms of one family (issue 30): ONNX Runtime's selection kernels skip NaN where torch
propagates it.  Written after the mechanism (``propose/edits/nan_select.py``) and never tuned on: the
ones the engine verified were forms33's ``argmax_nan`` and ``maxpool_nan``.  Imported by drifttui as
``tests/causes/forms_nan.py:fn``.  Each reproduces with torch 2.13 / ONNX Runtime 1.32 with both
exporters (probed: the file's value is finite where torch's is NaN, or another index); the origin is
always the child ``body``.  Reported upstream:

* ``amax_nan``: ``Tensor.amax`` over a row holding NaN: ``ReduceMax`` returns the largest other value
  unless the NaN comes first (microsoft/onnxruntime#10514, apache/tvm#19572, iree-org/iree#24503);
* ``max_dim_nan``: ``torch.max(x, dim)``, values and indices both used: ``ReduceMax`` and ``ArgMax``
  both skip the NaN (apache/tvm#19558 for ArgMax: ORT returns the NaN's index only when it is first);
* ``min_idx_nan``: ``torch.min(x, dim).indices``: ``ArgMin`` (openvinotoolkit/openvino#35886's family);
* ``adaptive_pool_nan``: ``F.adaptive_max_pool2d`` of a feature map with NaN: torch propagates it since
  pytorch/pytorch#7670 (the fix of #7645), ONNX ``MaxPool`` (TorchScript) / ``ReduceMax`` drops it;
* ``cnn_pool_nan``: ``nn.MaxPool2d`` after a ``sqrt`` of a conv's output (a NaN where it is negative);
* ``masked_amax``: NaN written into masked positions (``masked_fill(mask, nan)``), then ``amax``.

The deep ones sit after forms30's 16-call Linear+GELU stem (``Deep``) or a 16-call conv stem
(``ConvDeep``) and before a head.  Clean controls: each deep model with ``nan=False`` (the same calls
on values that hold no NaN).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


def _nan_source(x: torch.Tensor, nan: bool) -> torch.Tensor:
    """log(x + 0.2): NaN where x < -0.2; log(|x| + 0.2) for the clean controls."""
    return torch.log((x if nan else x.abs()) + 0.2)


class AmaxNaN(nn.Module):
    def __init__(self, nan: bool = True) -> None:
        super().__init__()
        self.nan = nan

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = _nan_source(x, self.nan).reshape(x.shape[0], 4, WIDTH // 4).amax(-1)
        return y.nan_to_num(-3.0).repeat_interleave(WIDTH // 4, -1) + x


class MaxDimNaN(nn.Module):
    def __init__(self, nan: bool = True) -> None:
        super().__init__()
        self.nan = nan

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, idx = torch.max(_nan_source(x, self.nan).reshape(x.shape[0], 4, WIDTH // 4), -1)
        y = values.nan_to_num(-3.0) + idx.float() * 0.25
        return y.repeat_interleave(WIDTH // 4, -1) + x


class MinIdxNaN(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.min(torch.sqrt(x + 0.5).reshape(x.shape[0], 2, WIDTH // 2), -1).indices
        return idx.float().repeat_interleave(WIDTH // 2, -1) * 0.1 + x


class MaskedAmax(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.masked_fill(x < -1.0, float("nan")).amax(0, keepdim=True)
        return torch.where(torch.isnan(y), torch.zeros_like(y), y) * 0.5 + x


class ConvDeep(nn.Module):
    """a 16-call conv stem (Conv2d, BatchNorm2d, ReLU ...) -> body (the form) -> head: the drift
    starts at body."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(5):
            layers += [nn.Conv2d(2 if i == 0 else 8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()]
        self.stem = nn.Sequential(*layers, nn.Conv2d(8, 4, 1))
        self.body = body
        self.head = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.stem(x.reshape(x.shape[0], 2, 4, WIDTH // 8))
        return self.head(self.body(f).flatten(1))


class AdaptivePoolNaN(nn.Module):
    def __init__(self, nan: bool = True) -> None:
        super().__init__()
        self.nan = nan

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        y = F.adaptive_max_pool2d(_nan_source(f * 4.0 - 1.0, self.nan), (2, 2))
        return y.nan_to_num(-2.0)


class CnnPoolNaN(nn.Module):
    def __init__(self, nan: bool = True) -> None:
        super().__init__()
        self.nan = nan
        self.pool = nn.MaxPool2d(2)

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        g = (f - f.mean((2, 3), keepdim=True)) * 4.0     # about half of each channel negative
        y = self.pool(torch.sqrt(g if self.nan else g.abs()))
        return torch.where(torch.isnan(y), torch.full_like(y, -1.0), y)


def _conv(make) -> nn.Module:
    torch.manual_seed(0)
    model = ConvDeep(make())
    for m in model.modules():       # running statistics that are not the identity
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def amax_nan() -> nn.Module: return _deep(AmaxNaN)                                  # noqa: E704
def amax_plain() -> nn.Module: return _deep(lambda: AmaxNaN(False))                 # noqa: E704
def max_dim_nan() -> nn.Module: return _deep(MaxDimNaN)                             # noqa: E704
def max_dim_plain() -> nn.Module: return _deep(lambda: MaxDimNaN(False))            # noqa: E704
def min_idx_nan() -> nn.Module: return _shallow(MinIdxNaN)                          # noqa: E704
def masked_amax() -> nn.Module: return _shallow(MaskedAmax)                         # noqa: E704
def adaptive_pool_nan() -> nn.Module: return _conv(AdaptivePoolNaN)                 # noqa: E704
def adaptive_pool_plain() -> nn.Module: return _conv(lambda: AdaptivePoolNaN(False))  # noqa: E704
def cnn_pool_nan() -> nn.Module: return _conv(CnnPoolNaN)                           # noqa: E704
def cnn_pool_plain() -> nn.Module: return _conv(lambda: CnnPoolNaN(False))          # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
