"""A model whose inputs take 0.1 s to draw: the time a sample costs outside its ORT run."""
import time

import torch
from torch import nn

DRAW = 0.1


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4)).eval()


def inputs() -> torch.Tensor:
    time.sleep(DRAW)
    return torch.randn(2, 8)
