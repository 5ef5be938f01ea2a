"""scratch"""
from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F

from tests.causes.forms30 import Deep

WIDTH = 32
ROWS = 6


def _op(how: str, p: torch.Tensor) -> torch.Tensor:
    if how == "floor":
        return torch.floor_divide(p * 3.0, 0.7) * 0.05
    if how == "clean":
        return torch.relu(p * 3.0) * 0.05 + 0.01
    return torch.signbit(torch.round(p)).float() * 0.2 - 0.1


class Scale(nn.Module):
    """x * c, c a scalar computed from a parameter (the exporter folds it)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.s = nn.Parameter(torch.tensor(-0.5 if how == "floor" else -0.3))
        self.how = how

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * _op(self.how, self.s)


class Scaled(nn.Module):
    def __init__(self, how: str, bias: bool = True) -> None:
        super().__init__()
        self.scale = Scale(how)
        self.lin = nn.Linear(WIDTH, WIDTH, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(self.scale(x))


class WeightOp(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(WIDTH, WIDTH))
        self.how = how

    def forward(self) -> torch.Tensor:
        return _op(self.how, self.w)


class Mixed(nn.Module):
    """F.linear with a weight computed from the one it is given (gain * w + base)."""

    def __init__(self, own: bool = False) -> None:
        super().__init__()
        self.g = nn.Parameter(torch.rand(WIDTH, WIDTH) + 0.5)
        self.base = nn.Parameter(torch.randn(WIDTH, WIDTH) * 0.1)
        self.own = own

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = F.linear(x, w * self.g + self.base)
        return torch.floor_divide(y * 3.0, 0.7) * 0.3 if self.own else y


class Tied(nn.Module):
    def __init__(self, how: str, own: bool = False) -> None:
        super().__init__()
        self.wt = WeightOp(how)
        self.proj = Mixed(own)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x, self.wt())


class Bias(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.b = nn.Parameter(torch.randn(WIDTH))
        self.how = how

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + _op(self.how, self.b)


class Biased(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH, bias=False)
        self.bias = Bias(how)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bias(self.lin(x))


def _deep(body: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    return Deep(body).eval()


def _mk(kind, how):
    torch.manual_seed(0)
    return Deep(kind(how)).eval()


def scale_floor() -> nn.Module: return _mk(Scaled, "floor")      # noqa: E704
def scale_signbit() -> nn.Module: return _mk(Scaled, "signbit")  # noqa: E704
def scalemm_floor() -> nn.Module:                                   # noqa: E704
    torch.manual_seed(0)
    return Deep(Scaled("floor", bias=False)).eval()


def scalemm_signbit() -> nn.Module:                                 # noqa: E704
    torch.manual_seed(0)
    return Deep(Scaled("signbit", bias=False)).eval()


def mixed_floor() -> nn.Module: return _mk(Tied, "floor")        # noqa: E704
def mixed_signbit() -> nn.Module: return _mk(Tied, "signbit")    # noqa: E704
def mixed_clean() -> nn.Module: return _mk(Tied, "clean")         # noqa: E704
def scalemm_clean() -> nn.Module:                                   # noqa: E704
    torch.manual_seed(0)
    return Deep(Scaled("clean", bias=False)).eval()


def bias_clean() -> nn.Module: return _mk(Biased, "clean")        # noqa: E704


def mixed_own() -> nn.Module:
    """wt clean, proj's own floor_divide drifting (TorchScript): proj is the origin, never wt."""
    torch.manual_seed(0)
    return Deep(Tied("clean", own=True)).eval()


def bias_floor() -> nn.Module: return _mk(Biased, "floor")       # noqa: E704
def bias_signbit() -> nn.Module: return _mk(Biased, "signbit")   # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(2, ROWS, WIDTH)
