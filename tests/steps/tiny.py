"""Tiny models for the step and check tests (imported by drifttui as ``tests/steps/tiny.py:build``)."""
from __future__ import annotations

import torch
from torch import nn

from drifttui.core.model.examples.models import _init


class Scale(nn.Module):
    """LayerScale-like: ``gamma`` is a plain tensor attribute (not in state_dict)."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.gamma = torch.full((c, 1, 1), 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = int(x.shape[1])
        return x * self.gamma[:c]


class ChannelNorm(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.norm = ChannelNorm(8)
        self.ls = Scale(8)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn(self.conv1(x)))
        z = self.conv2(y)
        z += y
        z = self.up(self.pool(z))
        return self.head(self.ls(self.norm(z)))


def build() -> nn.Module:
    return _init(Tiny(), seed=5)


def inputs() -> torch.Tensor:
    return torch.randn(1, 3, 16, 16)


class RMSNorm2d(nn.Module):
    """A hand-written (decomposed) norm: (x / sqrt(mean(x^2) + eps)) * weight."""

    def __init__(self, c: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c, 1, 1) + 0.1 * torch.arange(c).reshape(c, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt(x.pow(2).mean(dim=1, keepdim=True) + self.eps) * self.weight


class Tiny2(nn.Module):
    """Reflection padding, a ceil-mode MaxPool, nearest upsampling, a decomposed norm, a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.conv = nn.Conv2d(3, 6, 3)
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.rms = RMSNorm2d(6)
        self.fc = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.rms(self.up(self.pool(self.conv(self.pad(x)))))
        return self.fc(z.mean(dim=(2, 3)))


def build2() -> nn.Module:
    return _init(Tiny2(), seed=9)


def inputs2() -> torch.Tensor:
    return torch.randn(1, 3, 15, 15)
