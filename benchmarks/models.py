"""Model factories for the engine benchmarks (used as MODEL specs: benchmarks/models.py:NAME)."""
from __future__ import annotations

import torch

from drifttui.core.model.examples import models


def resnet18_w64() -> torch.nn.Module:
    """ResNet-18-style CNN, width 64 (input 1x3x224x224)."""
    return models._init(models.ResNet18(width=64), 0)


def transformer_d256() -> torch.nn.Module:
    """Transformer encoder, 4 layers, d=256, 8 heads, 128 tokens (input int64 1x128)."""
    return models._init(models.TransformerEncoder(d=256, heads=8, depth=4, seq=128), 0)


def deep_mlp(depth: int = 40, width: int = 256) -> torch.nn.Module:
    """A deep stack of Linear+ReLU (the windowed-capture case)."""
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return models._init(torch.nn.Sequential(*layers), 0)


MODELS = {
    "resnet18": ("benchmarks/models.py:resnet18_w64", "shape:1x3x224x224"),
    "transformer": ("benchmarks/models.py:transformer_d256", "shape:int64:1x128"),
}
