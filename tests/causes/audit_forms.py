"""Forms written by the issue-30 audit (session 33), each a torch model whose export drifts, kept small.

* ``bank_cosine`` (TorchScript): a query scored against a memory bank of unnormalised sums,
  ``F.cosine_similarity(q.unsqueeze(1), bank.unsqueeze(0))``, where the bank is the parent's buffer handed to
  the scoring module as an argument.  The TorchScript exporter folds ``bank.unsqueeze(0)`` into an initializer and
  lowers the similarity as ``x.y / sqrt(max(|x|^2 |y|^2, eps^2))``, whose product overflows float32 for vectors of
  norm ~1e10 (torch divides by each norm first): the call is the similarity, never the ``unsqueeze`` of the
  argument the file holds as a constant.
* ``phase_t`` (TorchScript): ``atan2(relu(y), z).t()`` in a module with a child Linear, read by ``mix``; the op
  named is ``atan2``, though the origin's case is fed its child's output, not the module's input.
* ``long_chain`` (TorchScript): 400 residual float32 steps in one scope (~2400 nodes), a ``floor_divide`` in the
  middle that TorchScript truncates; its input carries the chain's noise, the error is its own.
"""
from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn


class Score(nn.Module):
    def forward(self, q: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return F.cosine_similarity(q.unsqueeze(1), m.unsqueeze(0), dim=-1)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.fc(x))


class BankCosine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(4)])
        self.register_buffer("bank", torch.randn(6, 16) * 4e9)
        self.score = Score()
        self.head = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.score(self.blocks(x) * 3e9, self.bank))


def bank_cosine() -> nn.Module:
    torch.manual_seed(0)
    return BankCosine()


def rows_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(5, 16),)


class Phase(nn.Module):
    """the angle of rectified 2-D coordinates, handed on feature-major: ``atan2(relu(y), z).t()``.  ``relu`` gives
    +0 where torch's ``atan2(+0, z < 0)`` is pi and the TorchScript lowering's is -pi; the ``.t()`` is folded into
    ``mix``'s Gemm.  The origin's case starts at its child ``proj``'s output: the module's own input is not
    among its feeds."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        return torch.atan2(F.relu(h[:, :16]), h[:, 16:]).t()


class PhaseNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(4)])
        self.phase = Phase()
        self.mix = nn.Linear(6, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.mix(self.phase(self.blocks(x)))))


def phase_t() -> nn.Module:
    torch.manual_seed(0)
    return PhaseNet()


def six_rows() -> tuple[torch.Tensor]:
    return (torch.randn(6, 16),)


class LongChain(nn.Module):
    """``steps`` small residual float32 steps in one scope, one ``floor_divide`` in the middle (TorchScript truncates
    it): by the floor_divide its input carries more than rounding noise (the steps' ulps add up), yet the error is
    the floor_divide's own."""

    def __init__(self, steps: int = 400) -> None:
        super().__init__()
        rnd = random.Random(0)
        self.s = [rnd.uniform(0.5, 1.5) for _ in range(steps)]
        self.b = [rnd.uniform(-0.2, 0.2) for _ in range(steps)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(self.s)
        for i in range(n):
            x = 0.97 * x + 0.05 * torch.tanh(x * self.s[i] + self.b[i])
            if i == n // 2:
                x = x + 0.1 * torch.floor_divide(x * 3.0, 0.7)
        return x


class ChainNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 16))
        self.body = LongChain()
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(x)))


def long_chain() -> nn.Module:
    torch.manual_seed(0)
    return ChainNet()


def four_rows() -> tuple[torch.Tensor]:
    return (torch.randn(4, 16),)
