"""Held-out drift forms for the causes scorecard (benchmarks/bench_causes.py), imported by drifttui
as ``benchmarks/causes_forms.py:fn``.  None of them is in tests/causes/: they are the scorecard's
held-out set, not material to tune on.  A Linear/Conv stem, then one child ``body`` holding the
form, so the drift origin is ``body``:

(a) upstream-reported behaviours that still reproduce with torch 2.13 / ORT 1.32
* ``pdist``: ``nn.PairwiseDistance(eps=0.5)`` (the origin: ``body.d``): TorchScript drops the eps
  (torch adds it to x - y);
* ``softplus_beta``: ``F.softplus(beta=2, threshold=3)``: TorchScript lowers it to
  Softplus(beta x) / beta with no threshold;
* ``logaddexp2``: ``torch.logaddexp`` of two different tensors far apart (dynamo: Log(Exp + Exp));
(c) ONNX Runtime kernel deviations (the reference evaluator agrees with torch)
* ``tanh_tail``: ``log(1 - tanh(x))`` for x in [5, 8]: ORT's Tanh is ulps off near 1;
* ``sig_log1m``: ``log1p(-sigmoid(x))`` on logits up to 15: ORT's Sigmoid near 1;
* ``silu_log``: ``log(-silu(-|x|))`` on large logits: ORT's Sigmoid tail inside SiLU's Mul;
(b) synthetic exporter mistranslations (edits of the exported file: ``EDITS`` in bench_causes.py)
* ``scaled``: ``x * 0.25 + 0.1`` then a tanh: the 0.25 exported as 0.27 (a functional constant);
* ``scaled_head``: the same, then a child Linear ``head`` whose output is the origin's;
* ``attn``: attention logits scaled by 1/sqrt(8) (0.3536) exported as 0.3;
* ``hsig``: ``F.hardsigmoid``: the HardSigmoid's alpha dropped (ONNX default 0.2, torch 1/6);
* ``gnorm``: ``nn.GroupNorm(2, 4, eps=1e-5)``: the exported epsilon set to 0.1;
clean controls (no drift; the ONNX reference evaluator disagrees on the first two)
* ``bicubic_ac``: bicubic interpolate with align_corners=True at 1.5x;
* ``grid_bicubic``: ``F.grid_sample(mode="bicubic", padding_mode="border")``;
* ``pdist`` (dynamo), ``softplus_beta`` (dynamo): the dynamo exporter gets them right;
* ``avg_ceil``: ``F.avg_pool2d(ceil_mode=True, padding=1)``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Fn(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


class PDist(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.d = nn.PairwiseDistance(eps=0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.d(x, x * 0.5 + 0.01)


class LogAddExp2(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logaddexp(x * 50.0, x.flip(1) * 60.0) / 50.0


class Attn(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x.reshape(x.shape[0], 1, 8)
        return torch.softmax((q.transpose(1, 2) @ q) * (1.0 / 8 ** 0.5), dim=-1).sum(1)


class ScaledHead(nn.Module):
    """The origin's output is its child ``head``'s (a Linear fed the wrongly scaled value)."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(x * 0.25 + 0.1))


class Stem(nn.Module):
    def __init__(self, body: nn.Module, image: bool = False, gain: float = 1.0) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1) if image else nn.Linear(8, 8)
        self.gain = gain
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        return self.body(h * self.gain if self.gain != 1.0 else h)


def _build(body: nn.Module, **kw) -> nn.Module:
    torch.manual_seed(0)
    return Stem(body, **kw).eval()


def pdist() -> nn.Module: return _build(PDist())                                                     # noqa: E704
def softplus_beta() -> nn.Module: return _build(Fn(lambda x: F.softplus(x, beta=2.0, threshold=3.0)), gain=4.0)  # noqa: E704,E501
def logaddexp2() -> nn.Module: return _build(LogAddExp2(), gain=3.0)                                 # noqa: E704
def tanh_tail() -> nn.Module: return _build(Fn(lambda x: torch.log(1 - torch.tanh(x.abs().clamp(max=3.0) + 5.0))))  # noqa: E704,E501
def sig_log1m() -> nn.Module: return _build(Fn(lambda x: torch.log1p(-torch.sigmoid(x.clamp(-15.0, 15.0)))), gain=12.0)  # noqa: E704,E501
def silu_log() -> nn.Module: return _build(Fn(lambda x: torch.log(-F.silu(-x.abs()))), gain=15.0)   # noqa: E704
def scaled() -> nn.Module: return _build(Fn(lambda x: torch.tanh(x * 0.25 + 0.1)), gain=3.0)       # noqa: E704


def scaled_head() -> nn.Module:
    torch.manual_seed(0)              # the head's weights too: each call builds the same model
    return Stem(ScaledHead(), gain=3.0).eval()


def attn() -> nn.Module: return _build(Attn(), gain=3.0)                                             # noqa: E704
def hsig() -> nn.Module: return _build(Fn(F.hardsigmoid), gain=3.0)                                 # noqa: E704
def gnorm() -> nn.Module: return _build(nn.GroupNorm(2, 4, eps=1e-5), image=True)                   # noqa: E704


def bicubic_ac() -> nn.Module:
    return _build(Fn(lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True)), image=True)


def grid_bicubic() -> nn.Module:
    grid = torch.linspace(-1.2, 1.2, 2 * 12 * 12).reshape(1, 12, 12, 2)
    return _build(Fn(lambda x: F.grid_sample(x, grid, mode="bicubic", padding_mode="border",
                                             align_corners=False)), image=True)


def avg_ceil() -> nn.Module:
    return _build(Fn(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)), image=True)


# drifttui seeds torch before each sample (seed S+i): the inputs use the global generator
def vec_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(4, 8),)


def img_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 3, 12, 12),)
