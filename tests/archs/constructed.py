"""Small models built to trigger one behaviour each (no timm / transformers needed)."""
from __future__ import annotations

import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(n) * 0.7 + 1)

    def forward(self, x):
        return x * self.w


class ToHalf(nn.Module):
    def forward(self, x):
        return x.half()


class ToFloat(nn.Module):
    def forward(self, x):
        return x.float()


class HalfChain(nn.Module):
    """float32 Linear -> float16 (x * w1 * w2) -> float32 Linear, each cast a module of its own.

    ONNX Runtime's CPU provider computes the float16 Muls in float32 between inserted Casts and
    drops the back-to-back Cast pairs, unless the value between them is a graph output: marking
    ``s2``'s and ``back``'s values changes the model output (measured: ~3e-4 on this build).
    """

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(64, 64)
        self.cast = ToHalf()
        self.s1 = Scale(64).half()
        self.s2 = Scale(64).half()
        self.back = ToFloat()
        self.out = nn.Linear(64, 64)

    def forward(self, x):
        return self.out(self.back(self.s2(self.s1(self.cast(self.inp(x))))))


class Branchy(nn.Module):
    """A data-dependent branch: torch.export refuses it, the TorchScript tracer takes one branch."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        if h.sum() > -1e9:
            h = torch.relu(h)
        return self.b(h)


class Named(nn.Module):
    """forward(x, mask, scale=None, use_cache=False): the HF calling convention (keywords)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x=None, mask=None, scale=None, use_cache=False):
        return self.lin(x) * mask


def _seeded(cls):
    def build():
        torch.manual_seed(0)
        return cls().eval()
    return build


half_chain = _seeded(HalfChain)
branchy = _seeded(Branchy)
named = _seeded(Named)


def vec64():
    return torch.randn(4, 64)


def vec8():
    return torch.randn(2, 8)


def named_in():
    return {"x": torch.randn(2, 8), "mask": torch.ones(2, 8)}
