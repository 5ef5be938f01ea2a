"""Drift forms of the dynamo exporter where the wrong node is not the origin's last (issue 20,
deliverable 1), imported by drifttui as ``tests/causes/fx_forms.py:fn``.  A Linear stem, then one
child module ``body``, so the drift origin is ``body``:

* ``logaddexp_head``: ``torch.logaddexp`` of logits far from 0, lowered by the dynamo exporter to
  ``Log(Exp(a) + Exp(b))`` (inf where torch's kernel is finite), then a Linear head and a tanh;
* ``expm1_head``: ``torch.expm1`` of small values, lowered to ``Exp(x) - 1`` (the low bits of a
  small x lost), scaled up, then a Linear head: the node's own error is small, the Linear after it
  carries the amplified one;
* ``log1p_head``: ``torch.log1p`` of small values (``Log(1 + x)``), scaled, then a Linear head;
* ``softplus_head``: ``F.softplus(threshold=0.5)`` (no module of its own) then a Linear head and a tanh; the dynamo
  exporter gets it right (``Where(x > t, x, Softplus(x))``), so the test drops the Where from the
  exported file (``drop_threshold``), as the TorchScript exporter does, keeping the FX metadata;
* ``floordiv_head``: a float ``torch.floor_divide`` then a Linear head and a tanh; the test turns
  the file's ``Floor`` into ``Cast(int64) -> Cast(float)`` (``truncate_floor``: what the TorchScript
  exporter emits, a truncation where torch floors), keeping the FX metadata;
* ``sin_head``: ``torch.sin`` then a Linear head and a tanh; the test turns the file's ``Sin`` into a
  ``Cos`` (``swap_sin``): no graph patch exists, a re-export verifies and tells that node's story;
* ``clean_head``: ``torch.logaddexp`` of logits near 0 then the same head (a clean control).
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn


class LogAddExpHead(nn.Module):
    def __init__(self, gain: float) -> None:
        super().__init__()
        self.gain = gain
        self.head = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.logaddexp(x * self.gain, x * (-self.gain)) / self.gain
        return torch.tanh(self.head(y))


class Expm1Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.expm1(x * 1e-4) * 1e4) * 2.0


class Log1pHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.log1p(x.abs() * 1e-5) * 1e5) - 1.0


class SoftplusHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.head(F.softplus(x * 2.0, threshold=0.5)))


class FloorDivHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.head(torch.floor_divide(x * 3.0, 0.7)))


class SinHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.head(torch.sin(x * 2.0)))


class Stem(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def _build(body: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)            # the body's weights too: each call builds the same model
    return Stem(body()).eval()


def logaddexp_head() -> nn.Module: return _build(lambda: LogAddExpHead(300.0))     # noqa: E704
def expm1_head() -> nn.Module: return _build(Expm1Head)                            # noqa: E704
def log1p_head() -> nn.Module: return _build(Log1pHead)                            # noqa: E704
def softplus_head() -> nn.Module: return _build(SoftplusHead)                      # noqa: E704
def floordiv_head() -> nn.Module: return _build(FloorDivHead)                      # noqa: E704
def sin_head() -> nn.Module: return _build(SinHead)                                # noqa: E704
def clean_head() -> nn.Module: return _build(lambda: LogAddExpHead(1.0))           # noqa: E704


def vec_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(4, 8),)
