"""Held-out batch H for issue 30 point 8 (session 31): a blind first-run measurement in three of the six families
the private set is said to hold (arithmetic, cumulative functions, integer conversions).  DRAFT: docstring filled
after screening."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

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


class ChannelQuant(nn.Module):
    """QAT: per-channel fake quantisation of an activation that already sits on a half-step grid."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.full((WIDTH,), STEP))
        self.register_buffer("zero", torch.zeros(WIDTH, dtype=torch.int32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grid = torch.round(x * 20.0) / 20.0
        return torch.fake_quantize_per_channel_affine(grid, self.scale, self.zero, 1, -128, 127) * 4.0


class HalfLogCumSumExp(nn.Module):
    """a float16 running log-normaliser, ``torch.logcumsumexp(scores.half(), -1)``, read back as float32."""

    def __init__(self, half: bool = True) -> None:
        super().__init__()
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.half = half

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.proj(x) * 4.0
        return torch.logcumsumexp(s.half() if self.half else s, -1).float()


class TopPMass(nn.Module):
    """nucleus sampling's cumulative probabilities over float16 logits: ``cumsum(softmax(logits.half()))``."""

    def __init__(self, half: bool = True) -> None:
        super().__init__()
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.half = half

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.proj(x) * 4.0
        probs = torch.softmax(logits.half() if self.half else logits, -1)
        return torch.cumsum(probs, -1).float() * 16.0


class HalfReciprocal(nn.Module):
    """an inverse scale in a float16 block: ``torch.reciprocal(s.half())`` of small positive scales."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.sigmoid(x) * 1e-2 + 1e-3
        return torch.reciprocal(s.half()).float() * 1e-2


class FisherZ(nn.Module):
    """Fisher's z-transform of a cosine similarity between nearly parallel vectors, ``atanh(cos)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cos = F.cosine_similarity(x, x + 1e-2 * x.roll(1, -1), dim=-1, eps=1e-8)
        return torch.atanh(cos.clamp(-1 + 1e-7, 1 - 1e-7)).unsqueeze(-1) * x


class PhaseWrap(nn.Module):
    """a sinusoidal time feature's phase wrapped to one period, ``torch.remainder(t * omega, 2 pi)``, of a
    whole-numbered time index ``t`` (milliseconds)."""

    def __init__(self, omega: float = 314.0) -> None:
        super().__init__()
        self.omega = omega

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.round(x * 1000.0)
        return torch.remainder(t * self.omega, 2 * math.pi) + x


def requant_average() -> nn.Module: return _deep(RequantAverage)                           # noqa: E704
def requant_shallow() -> nn.Module: return _shallow(RequantAverage)                        # noqa: E704
def requant_offgrid() -> nn.Module: return _deep(lambda: RequantAverage(on_grid=False))    # noqa: E704
def channel_quant_shallow() -> nn.Module: return _shallow(ChannelQuant)                    # noqa: E704
def half_logcumsumexp() -> nn.Module: return _deep(HalfLogCumSumExp)                      # noqa: E704
def float_logcumsumexp() -> nn.Module: return _deep(lambda: HalfLogCumSumExp(half=False))  # noqa: E704
def top_p_mass() -> nn.Module: return _deep(TopPMass)                                      # noqa: E704
def top_p_float() -> nn.Module: return _deep(lambda: TopPMass(half=False))                # noqa: E704
def half_reciprocal() -> nn.Module: return _deep(HalfReciprocal)                           # noqa: E704
def half_reciprocal_shallow() -> nn.Module: return _shallow(HalfReciprocal)                # noqa: E704
def fisher_z() -> nn.Module: return _deep(FisherZ)                                         # noqa: E704
def fisher_z_shallow() -> nn.Module: return _shallow(FisherZ)                              # noqa: E704


def phase_wrap() -> nn.Module: return _deep(PhaseWrap)                                     # noqa: E704
def phase_small() -> nn.Module: return _deep(lambda: PhaseWrap(0.314))                      # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
