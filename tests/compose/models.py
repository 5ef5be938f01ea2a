"""Small seeded models whose deployment pipelines drift at one known stage (tests/compose).

``padconv``: an explicit zero Pad before a Conv.  At ORT level ``all`` the NchwcTransformer runs
the Conv in the blocked NCHWc layout (another accumulation order): its output moves by ~2e-7
while level ``disable`` matches torch's to the bit on this model -- a fusion-order difference,
invisible at the default tolerance, over a tight one (atol 1e-7, rtol 0).
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve()
INPUTS = {"convmul": "shape:1x4x8x8", "convadd": "shape:1x4x8x8", "padconv": "shape:1x4x8x8", "cnn": "shape:1x3x16x16", "mlp": "shape:4x32", "wide": "shape:2x16"}


class PadConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3)
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        return self.head(torch.relu(self.conv(F.pad(x, (1, 1, 1, 1)))))


class ConvMul(nn.Module):
    """A Conv whose output is scaled by a constant.  ORT's Conv matches torch's to the bit here (at
    level disable), so the raw export's error is 0; onnxsim folds the Mul into the Conv's weights,
    which rounds every weight once more: ~1e-6."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)

    def forward(self, x):
        return self.conv(x) * 3.7


class ConvAdd(nn.Module):
    """A Conv plus a per-channel constant: onnxslim's FusionConvAdd folds the Add into the Conv's bias
    (the sum rounded in another order: ~2e-7, where the raw export's error is 0)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)
        self.register_buffer("shift", torch.randn(8, 1, 1))

    def forward(self, x):
        return self.conv(x) + self.shift


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1, self.act1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()
        self.conv2, self.bn2, self.act2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.act2(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(32, 64), nn.LayerNorm(64), nn.Linear(64, 8)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


class Wide(nn.Module):
    """Weights and activations past float16's range (65504) before a LayerNorm brings them back:
    clean in float32; a float16 converter clamps the weights (onnxconverter-common: to 1e4) and the
    outputs move by ~0.5."""

    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(16, 32), nn.LayerNorm(32), nn.Linear(32, 4)
        with torch.no_grad():
            self.fc1.weight.mul_(1e6)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)))


def _seeded(cls: type) -> nn.Module:
    torch.manual_seed(0)
    m = cls()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2)
    return m.eval()


def convmul() -> nn.Module:
    return _seeded(ConvMul)


def convadd() -> nn.Module:
    return _seeded(ConvAdd)


def padconv() -> nn.Module:
    return _seeded(PadConv)


def cnn() -> nn.Module:
    return _seeded(CNN)


def mlp() -> nn.Module:
    return _seeded(MLP)


def wide() -> nn.Module:
    return _seeded(Wide)


def spec(name: str) -> str:
    return f"{HERE}:{name}"
