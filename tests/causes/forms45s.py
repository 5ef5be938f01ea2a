"""Held-out batch 45S for issue 30 (session 45): DOCSTRING PENDING."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


def _ste_round(x: torch.Tensor) -> torch.Tensor:
    """round with a straight-through gradient (the QAT idiom)."""
    return x + (x.round() - x).detach()


class LsqQuant(nn.Module):
    """LSQ: a learned step ``s`` (kept positive by ``abs().clamp_min``), ``round(clamp(x / s)) * s``, symmetric."""

    def __init__(self, bits: int = 8, step: float = 0.05) -> None:
        super().__init__()
        self.step = nn.Parameter(torch.tensor(step))
        self.qmin, self.qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.step.abs().clamp_min(1e-5)
        return _ste_round((x / s).clamp(self.qmin, self.qmax)) * s


class FloorQuant(nn.Module):
    """fixed-step quantiser rounding half up by ``floor(x / s + 0.5)`` (int8 range)."""

    def __init__(self, step: float = 0.05) -> None:
        super().__init__()
        self.step = step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x / self.step + 0.5).floor().clamp(-128, 127) * self.step


class AmaxQuant(nn.Module):
    """dynamic per-token quantiser: the scale from each row's ``abs().amax()`` in forward, symmetric ``bits``."""

    def __init__(self, bits: int = 4) -> None:
        super().__init__()
        self.n = 2 ** (bits - 1) - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.abs().amax(-1, keepdim=True).clamp_min(1e-5) / self.n
        return _ste_round(x / s).clamp(-self.n - 1, self.n) * s


class QatBlock(nn.Module):
    """a QAT layer exported as trained: a linear map (its weight and bias held here), then its activation
    fake-quantiser's code, run in ``mode``: ``"half"`` (the layer converted by ``.half()``), ``"amp"`` (under
    ``torch.autocast`` float16) or ``"float"``.  The quantiser is called as a function (``quant.forward``), so
    the block is one module call."""

    def __init__(self, quant: nn.Module, mode: str = "half") -> None:
        super().__init__()
        lin = nn.Linear(WIDTH, WIDTH)
        self.weight, self.bias = lin.weight, lin.bias
        self.q, self.mode = [quant], mode
        for k, v in quant.named_parameters():
            self.register_parameter(f"q_{k}", v)
        if mode == "half":
            self.half()
            quant.half()

    def _quant(self, y: torch.Tensor) -> torch.Tensor:
        return self.q[0].forward(y)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "half":
            return self._quant(F.linear(x.half(), self.weight, self.bias)).float()
        with torch.autocast("cpu", dtype=HALF, enabled=self.mode == "amp"):
            y = self._quant(F.linear(x, self.weight, self.bias))
        return y.float()


def lsq_half() -> nn.Module: return _deep(lambda: QatBlock(LsqQuant(8)))                        # noqa: E704
def lsq_float() -> nn.Module: return _deep(lambda: QatBlock(LsqQuant(8), "float"))             # noqa: E704
def lsq4_half() -> nn.Module: return _deep(lambda: QatBlock(LsqQuant(4, 0.4)))                # noqa: E704
def floor_half() -> nn.Module: return _deep(lambda: QatBlock(FloorQuant()))                    # noqa: E704
def floor_float() -> nn.Module: return _deep(lambda: QatBlock(FloorQuant(), "float"))         # noqa: E704
def amax_half() -> nn.Module: return _deep(lambda: QatBlock(AmaxQuant(4)))                     # noqa: E704
def lsq_amp() -> nn.Module: return _shallow(lambda: QatBlock(LsqQuant(8), "amp"))             # noqa: E704
def amax_amp_off() -> nn.Module: return _shallow(lambda: QatBlock(AmaxQuant(4), "float"))     # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
