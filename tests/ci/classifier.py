"""A tiny classifier for the CI-gate tests (imported by drifttui as ``tests/ci/classifier.py:build``)."""
from __future__ import annotations

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def build() -> nn.Module:
    torch.manual_seed(0)
    return Classifier().eval()


def inputs() -> torch.Tensor:
    return torch.randn(32, 16)      # 32 rows per sample: top-1 agreement over 32 predictions
