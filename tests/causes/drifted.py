"""Small models for the verified-causes tests (imported by drifttui as ``tests/causes/drifted.py:fn``).

``Multi`` holds one part per silent-drift class; a drifted variant edits the ONNX nodes of one
part (see conftest.py).  Functional calls (``F.interpolate``, ``F.avg_pool2d``, ``F.layer_norm``)
sit inside plain modules on purpose: no module attribute tells the checks the torch arguments.
``Seq`` bakes a sequence length into a constant when traced; ``IntDiv`` floors integers.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from drifttui.core.model.examples.models import _init


class Up(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


class Pool(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(x, 3, stride=2, padding=1)      # count_include_pad=True by default


class ChannelNorm(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.arange(c, dtype=torch.float32) / c)
        self.bias = nn.Parameter(0.05 * torch.ones(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), self.weight, self.bias)   # eps: the default
        return y.permute(0, 3, 1, 2)


class Scale(nn.Module):
    """``gamma`` is a plain tensor attribute: not in state_dict, so a reload loses trained values."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.gamma = torch.full((1, c, 1, 1), 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class Multi(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.LeakyReLU(0.2)
        self.pool = Pool()
        self.up = Up()
        self.norm = ChannelNorm(8)
        self.gelu = nn.GELU(approximate="tanh")
        self.scale = Scale(8)
        self.head = nn.Conv2d(8, 4, 1)
        self.proj = nn.Linear(4 * 16 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.up(self.pool(self.act(self.stem(x))))
        y = self.scale(self.gelu(self.norm(y)))
        return self.proj(self.head(y).flatten(1))


def multi() -> nn.Module:
    return _init(Multi(), seed=5)


def multi_inputs() -> tuple:
    return (torch.randn(1, 3, 16, 16),)


class MeanTokens(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(1) / float(x.shape[1])          # a Python number: traced as a constant


class Seq(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 8)
        self.mean = MeanTokens()
        self.out = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.mean(self.embed(x)))


def seq() -> nn.Module:
    return _init(Seq(), seed=6)


def seq_inputs_8() -> tuple:
    return (torch.randn(1, 8, 8),)


def seq_inputs_16() -> tuple:
    return (torch.randn(1, 16, 8),)


class FloorDiv(nn.Module):
    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return a // 3


class IntDiv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fd = FloorDiv()
        self.emb = nn.Embedding(20, 4)

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return self.emb(self.fd(a) + 7)


def intdiv() -> nn.Module:
    return _init(IntDiv(), seed=7)


def intdiv_inputs() -> tuple:
    return (torch.arange(-20, 20, dtype=torch.int64).reshape(1, 40),)


class ClipNet(nn.Module):
    """A bounded activation (Hardtanh): exported as one Clip whose bounds are constants."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(8, 16)
        self.bound = nn.Hardtanh(-0.5, 0.75)
        self.out = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.bound(self.stem(x)))


def clip() -> nn.Module:
    return _init(ClipNet(), seed=8)


def clip_inputs() -> tuple:
    return (2 * torch.randn(1, 8),)
