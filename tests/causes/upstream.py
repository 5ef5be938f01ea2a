"""Upstream-reported drift forms that still reproduce with torch 2.13 and ONNX Runtime 1.32 (issue
20), imported by drifttui as ``tests/causes/upstream.py:fn``.  A Conv/Linear stem, then one child
module ``body`` holding the form, so the drift origin is ``body``:

* ``nearest``: ``F.interpolate(size=(32, 64), mode="nearest")`` from 13 x 26: ONNX Runtime's
  Resize divides by the float32 scale 64/26 and picks source pixel 12 where torch (and the ONNX
  reference implementation) pick 13 (microsoft/onnxruntime#12098, #28085, #28310): a runtime
  deviation;
* ``nearest_scale``: the same with ``scale_factor=64/26``: the file holds float32(64/26) and the
  spec's ``dst / scale`` rounds differently from torch's ``dst * (1/scale)`` (the reference
  evaluator drifts too: an export mistranslation);
* ``nearest3d``: a 5-D ``nn.Upsample(size=(2, 8, 64))`` from 2 x 4 x 26 (the #12098 repro's rank);
* ``skip_up``: a U-Net skip, ``F.interpolate(a, size=skip.shape[2:], mode="nearest") + skip``
  with 14 -> 46 (the sizes come from a tensor's shape); here the reference evaluator picks ORT's
  pixel too, so it is the spec's rounding (kind export);
* ``bilinear9``: a bilinear ``F.interpolate`` at opset 9, where TorchScript emits ``Upsample``
  (asymmetric only, like opset-10 Resize);
* ``log1p``: ``torch.log1p`` of small values, lowered to ``Log(1 + x)`` (pytorch/pytorch#24808);
* ``expm1``: ``torch.expm1`` of small values, lowered by the dynamo exporter to ``Exp(x) - 1``;
* ``index_add``: ``index_add`` with duplicate data-dependent indices: the TorchScript exporter
  emits ScatterElements without reduction (pytorch/pytorch#111159, open);
* ``alone_12098`` / ``alone_121390``: the upstream repros as they were filed, a model that is one
  interpolate call and no child module (its nodes carry no scope: the whole graph is the case):
  26 -> 64 in 5-D (microsoft/onnxruntime#12098) and ``scale_factor=(2.05, 3.15)`` on 4 x 2
  (pytorch/pytorch#121390);
* ``scatter_old``: ``scatter_add`` with duplicate indices at opset 9/10, where TorchScript emits the
  deprecated ``Scatter`` (data + Scatter(zeros, idx, src); pytorch/pytorch#32960): no reduction;
* ``logsigmoid_far``: ``F.logsigmoid`` of logits below -88, lowered to ``Log(Sigmoid(x))``: float32
  Sigmoid underflows to 0 in the reference evaluator too (kind export), torch's kernel does not;
* ``bce``: ``binary_cross_entropy_with_logits`` on large logits: TorchScript lowers it to
  ``-(y Log(Sigmoid(x)) + (1 - y) Log(1 - Sigmoid(x)))`` (pytorch/pytorch#49675), -inf where torch's
  stable kernel is finite;
* ``alone_*``: the other upstream forms as one-call models (no child module, the root is the
  origin): a float ``floor_divide``, ``nn.Softplus(threshold=0.5)``, ``scatter_add`` at opset 11,
  ``log(sigmoid(40 x))``, a bilinear interpolate at opset 10, ``topk`` of rounded values (ties);
* clean controls: ``nearest2x`` (integer scale), ``log1p_big`` (arguments far from 0).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Interp(nn.Module):
    def __init__(self, **kw) -> None:
        super().__init__()
        self.kw = kw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, **self.kw)


class Log1p(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(x.abs() * self.scale) / self.scale


class Expm1(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.expm1(x * 1e-4) * 1e4


class IndexAdd(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.argmax(x[:, :4], dim=1)       # data-dependent: duplicates the exporter cannot see
        return torch.zeros(4, x.shape[1]).index_add(0, idx, x)


class SkipUp(nn.Module):
    def forward(self, a: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        return F.interpolate(a, size=skip.shape[2:], mode="nearest") + skip


class Skip(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(3, 4, (1, 6), stride=(1, 3))     # 8 x 46 -> 8 x 14
        self.side = nn.Conv2d(3, 4, 1)
        self.body = SkipUp()

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.body(self.down(y), self.side(y))


def skip_up() -> nn.Module:
    torch.manual_seed(0)
    return Skip().eval()


class ScatterAdd(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.tensor([[0, 1, 0, 2, 1, 0, 3, 3]]).expand(x.shape[0], 8)
        return torch.ones(x.shape[0], 4).scatter_add(1, idx, x)


class LogSig(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.logsigmoid(x)


class BCE(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(x, (x > 0).float() * 0.25, reduction="none")


class Gain(nn.Module):
    def __init__(self, body: nn.Module, gain: float) -> None:
        super().__init__()
        self.gain, self.inner = gain, body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x * self.gain)


class Stem(nn.Module):
    def __init__(self, body: nn.Module, rank: int = 0) -> None:
        super().__init__()
        self.stem = {0: lambda: nn.Linear(8, 8), 2: lambda: nn.Conv2d(3, 4, 3, padding=1),
                     3: lambda: nn.Conv3d(3, 2, 3, padding=1)}[rank]()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def _build(body: nn.Module, rank: int = 0) -> nn.Module:
    torch.manual_seed(0)
    return Stem(body, rank).eval()


def nearest() -> nn.Module: return _build(Interp(size=(32, 64), mode="nearest"), 2)           # noqa: E704
def nearest_scale() -> nn.Module: return _build(Interp(scale_factor=64 / 26, mode="nearest"), 2)  # noqa: E704
def nearest3d() -> nn.Module: return _build(nn.Upsample(size=(2, 8, 64), mode="nearest"), 3)  # noqa: E704
def bilinear9() -> nn.Module: return _build(Interp(scale_factor=2, mode="bilinear"), 2)      # noqa: E704
def nearest2x() -> nn.Module: return _build(Interp(scale_factor=2, mode="nearest"), 2)        # noqa: E704
def log1p() -> nn.Module: return _build(Log1p(1e-5))                                          # noqa: E704
def log1p_big() -> nn.Module: return _build(Log1p(3.0))                                      # noqa: E704
def expm1() -> nn.Module: return _build(Expm1())                                              # noqa: E704
def index_add() -> nn.Module: return _build(IndexAdd())                                       # noqa: E704


def scatter_old() -> nn.Module: return _build(ScatterAdd())                                   # noqa: E704
def logsigmoid_far() -> nn.Module: return _build(Gain(LogSig(), 400.0))                      # noqa: E704
def bce() -> nn.Module: return _build(Gain(BCE(), 40.0))                                      # noqa: E704


def alone_12098() -> nn.Module: return Interp(size=(1, 1, 64), mode="nearest").eval()          # noqa: E704
def alone_121390() -> nn.Module: return Interp(scale_factor=(2.05, 3.15), mode="nearest").eval()  # noqa: E704


class FloorDiv(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.floor_divide(x * 3.0, 0.7)


class LogSigmoid40(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(torch.sigmoid(x * 40))


class TopkTies(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.topk(torch.round(x), 3, dim=1).indices.float()


def alone_floordiv() -> nn.Module: return FloorDiv().eval()                                    # noqa: E704
def alone_softplus() -> nn.Module: return nn.Softplus(threshold=0.5).eval()                    # noqa: E704
def alone_scatter() -> nn.Module: return ScatterAdd().eval()                                   # noqa: E704
def alone_logsig() -> nn.Module: return LogSigmoid40().eval()                                  # noqa: E704
def alone_bilinear() -> nn.Module: return Interp(scale_factor=2, mode="bilinear").eval()       # noqa: E704
def alone_topk() -> nn.Module: return TopkTies().eval()                                        # noqa: E704


# drifttui seeds torch before each sample (seed S+i): the inputs use the global generator
def img_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 3, 13, 26),)


def vol_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 3, 2, 4, 26),)


def vec_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(2, 8),)


def rows_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(4, 8),)


def line_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 1, 1, 1, 26),)


def tiny_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 1, 4, 2),)


def wide_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 3, 8, 46),)


def small_img_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 3, 8, 8),)
