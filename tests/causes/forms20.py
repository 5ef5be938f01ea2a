"""Drift forms behind session 19's causes (issue 20), imported by drifttui as
``tests/causes/forms20.py:fn``: variants of the scorecard's held-out forms
(benchmarks/causes_forms.py), not the same models.  A Linear stem, then one child ``body``:

* ``divided``: ``x / 3.0 - 0.5`` then a tanh; the test edits the file's 3.0 to 2.5 (a functional
  constant: no module attribute holds it);
* ``shared``: ``tanh(x + 0.3) * sigmoid(flip(x) + 0.3)``; the test edits the first Add's 0.3 to
  0.35 (the right number is still read by the other Add);
* ``tanh_neg``: ``log(1 + tanh(-x))`` for x in [5, 8]: ONNX Runtime's Tanh is ulps off near -1;
* ``sig_one_minus``: ``log(1 - sigmoid(x))`` for x in [10, 15.5]: ORT's Sigmoid rounds otherwise than
  torch's ``1 / (1 + exp(-x))`` near 1;
* ``softplus_half``: ``F.softplus(x, beta=0.5, threshold=1.0)``: TorchScript drops the threshold
  and no module attribute holds it;
* ``pdist``: ``nn.PairwiseDistance(eps=0.3)``: TorchScript drops the eps.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Divided(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x / 3.0 - 0.5)


class Shared(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x + 0.3) * torch.sigmoid(x.flip(1) + 0.3)


class TanhNeg(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(1 + torch.tanh(-(x.abs().clamp(max=3.0) + 5.0)))


class SigOneMinus(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(1 - torch.sigmoid(x.abs().clamp(max=5.5) + 10.0))


class SoftplusHalf(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=0.5, threshold=1.0)


class PDist(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.d = nn.PairwiseDistance(eps=0.3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.d(x, x * 0.5 - 0.01)


class Stem(nn.Module):
    def __init__(self, body: nn.Module, gain: float) -> None:
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.gain = gain
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * self.gain)


def _build(body: type, gain: float = 1.0) -> nn.Module:
    torch.manual_seed(0)
    return Stem(body(), gain).eval()


def divided() -> nn.Module: return _build(Divided, 3.0)                 # noqa: E704
def shared() -> nn.Module: return _build(Shared, 2.0)                   # noqa: E704
def tanh_neg() -> nn.Module: return _build(TanhNeg)                     # noqa: E704
def sig_one_minus() -> nn.Module: return _build(SigOneMinus)            # noqa: E704
def softplus_half() -> nn.Module: return _build(SoftplusHalf, 4.0)      # noqa: E704
def pdist() -> nn.Module: return _build(PDist)                          # noqa: E704


# drifttui seeds torch before each sample (seed S+i): the inputs use the global generator
def vec_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(4, 8),)
