"""Held-out batch 48D for issue 30 (session 48): DOCSTRING TO WRITE."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


class HalfInstance(nn.Module):
    """a float16 ``nn.InstanceNorm1d(8, affine=True)`` over (8 channels x 4 steps) of activations that carry a DC
    offset (``offset``): torch normalises a float16 tensor in float32 (its opmath)."""

    def __init__(self, offset: float = 50.0, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.norm = nn.InstanceNorm1d(8, affine=True).to(dtype)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)
        self.offset, self.dtype = offset, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = (x.view(x.shape[0], 8, 4) + self.offset).to(self.dtype)
        return self.norm(h).float().flatten(1)


class AmpGroupNorm(nn.Module):
    """a projection under ``torch.autocast`` (float16) into 15 channels x 2, plus a DC offset, then
    ``nn.GroupNorm(5, 15)`` (an odd group count; autocast runs it in float32) and a float32 projection back."""

    def __init__(self, enabled: bool = True, offset: float = 40.0) -> None:
        super().__init__()
        self.proj, self.norm, self.out = nn.Linear(WIDTH, 30), nn.GroupNorm(5, 15), nn.Linear(30, WIDTH)
        self.enabled, self.offset = enabled, offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            h = self.norm((self.proj(x) + self.offset).view(n, 15, 2)).flatten(1)
        return self.out(h.float())


class HalfFRN(nn.Module):
    """Filter Response Normalization + TLU (Singh & Krishnan 2019) in float16 over 8 channels x (2 x 2):
    ``nu2 = x.pow(2).mean((2, 3))``, ``x * rsqrt(nu2 + |eps|)``, ``gamma * x + beta``, ``max(., tau)``; the
    activations scaled by ``gain`` first."""

    def __init__(self, gain: float = 1500.0) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(1, 8, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, 8, 1, 1))
        self.tau = nn.Parameter(torch.randn(1, 8, 1, 1) * 0.1)
        self.eps = nn.Parameter(torch.tensor(1e-6))
        self.gain = gain
        self.half()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = (x.view(x.shape[0], 8, 2, 2) * self.gain).half()
        nu2 = h.pow(2).mean(dim=(2, 3), keepdim=True)
        h = h * torch.rsqrt(nu2 + self.eps.abs())
        return torch.max(self.gamma * h + self.beta, self.tau).float().flatten(1)


class HalfRMS(nn.Module):
    """an RMSNorm written without the float32 upcast (early T5 / Llama ports) on float16 activations scaled by
    ``gain``: ``h * rsqrt(h.pow(2).mean(-1) + eps) * weight``."""

    def __init__(self, gain: float = 60.0) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(WIDTH, dtype=HALF))
        self.gain = gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = (x * self.gain).half()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight).float()


class StdConv(nn.Module):
    """timm's ``StdConv2d``: the weight standardised per output channel by ``F.batch_norm(training=True)`` over a
    (1, out, fan_in) view, then the convolution (8 channels x 2 x 2, 3x3, padding 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = F.batch_norm(self.conv.weight.reshape(1, 8, -1), None, None, training=True, momentum=0.0,
                         eps=1e-6).reshape_as(self.conv.weight)
        return F.conv2d(x.view(x.shape[0], 8, 2, 2), w, self.conv.bias, padding=1).flatten(1)


class DyT(nn.Module):
    """Dynamic Tanh (Zhu et al. 2025), LayerNorm's drop-in: ``weight * tanh(alpha * x) + bias``."""

    def __init__(self, alpha: float = 0.5) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.full((1,), alpha))
        self.weight, self.bias = nn.Parameter(torch.ones(WIDTH)), nn.Parameter(torch.zeros(WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.alpha * x) * self.weight + self.bias


def half_instance() -> nn.Module: return _deep(HalfInstance)                                       # noqa: E704
def half_instance_f32() -> nn.Module: return _deep(lambda: HalfInstance(50.0, torch.float32))       # noqa: E704
def amp_groupnorm() -> nn.Module: return _deep(AmpGroupNorm)                                       # noqa: E704
def amp_groupnorm_off() -> nn.Module: return _deep(lambda: AmpGroupNorm(False))                     # noqa: E704
def half_frn() -> nn.Module: return _deep(HalfFRN)                                                 # noqa: E704
def half_frn_cool() -> nn.Module: return _deep(lambda: HalfFRN(100.0))                                # noqa: E704
def half_rms() -> nn.Module: return _shallow(HalfRMS)                                              # noqa: E704
def half_rms_cool() -> nn.Module: return _shallow(lambda: HalfRMS(4.0))                             # noqa: E704
def std_conv() -> nn.Module: return _deep(StdConv)                                                 # noqa: E704
def dyt() -> nn.Module: return _deep(DyT)                                                          # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
