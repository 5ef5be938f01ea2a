"""Upstream drift forms found for issue 30 point 8 (session 22), imported by drifttui as
``tests/causes/forms32.py:fn``.  Each was found in a torch / onnxscript thread and still reproduces
with torch 2.13 / ONNX Runtime 1.32 (``tests/causes/test_forms32.py`` says which exporter).  The
deep ones sit after forms30's 16-call stem and before a head; the shallow ones after one Linear.
The form is always the child ``body``:

* ``cdist_l1``: ``torch.cdist(x, prototypes, p=1)`` (pytorch/pytorch#69201, #144212: the TorchScript
  lowering of cdist ignores how torch computes it): NaN where torch is finite;
* ``cdist_linf``: the same with ``p=inf``;
* ``pairwise_l1``: ``F.pairwise_distance(a, b, p=1, eps=0.3)``: TorchScript's lowering raises
  ``|a - b + eps|`` to the power p through ``Pow`` of a negative base... NaN;
* ``clamp_int``: ``torch.clamp(int_tensor, min=-2.5)`` (onnxscript#2066, pytorch/pytorch#130826's
  family): torch promotes to float and clamps at -2.5, the TorchScript file casts the bound to the
  tensor's integer type (-2): an integer conversion;
* ``floordiv_neg``: ``int_tensor // -3`` (TorchScript: a truncating integer division);
* ``cos_sim``: ``F.cosine_similarity(a, b, eps=1e-3)`` of small vectors: torch clamps each norm
  by eps, the TorchScript lowering clamps their product;
* ``signbit``: ``torch.signbit(torch.round(x))``: the dynamo lowering tests ``x < 0`` and misses
  negative zero (torch.round(-0.3) is -0.0);
* ``logcumsumexp``: ``torch.logcumsumexp`` of large values: the dynamo lowering overflows to inf;
* ``ce_weighted_smooth``: ``F.cross_entropy(weight=w, label_smoothing=0.2, reduction="none")``:
  torchlib mis-weighs the smoothing term (the class weights this time);
* ``multilabel``: ``F.multilabel_soft_margin_loss`` of large logits: ``Log(Sigmoid(x))``, -inf;
* ``bucketed`` / ``bucketed_top``: a ``bucket`` module returning ``torch.clamp(int_tensor, min=-2.5)``
  (``max=5`` too) (a float to
  torch) read by a ``head``: the TorchScript file keeps the bucket's result in int64 and casts it to
  float outside the bucket, so the bucket has no float value of its own (issue 30 point 6);
* ``trilinear``: a 5-D trilinear ``F.interpolate`` exported at opset 10 (Jajal et al., ISSTA'24's
  re-checked set): the opset-10 Resize is always asymmetric; the call upsamples without antialias;
* ``amax_nan``: ``torch.amax`` of a row holding NaN: ONNX Runtime's ReduceMax drops NaN depending on
  how many there are (microsoft/onnxruntime#10514, open), torch and the reference evaluator propagate it;
* clean controls: ``cdist_l2`` (p=2), ``clamp_int_whole`` (an integer bound).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from typing import Optional

from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class CDist(nn.Module):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p
        self.prototypes = nn.Parameter(torch.randn(WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cdist(x, self.prototypes, p=self.p) * 0.1


class PairwiseL1(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pairwise_distance(x, x.flip(0) * 0.5, p=1, eps=0.3).unsqueeze(-1) * 0.05 * x


class ClampInt(nn.Module):
    def __init__(self, low: float) -> None:
        super().__init__()
        self.low = low

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp((x * 4 - 6).long(), min=self.low).float() * 0.25


class FloorDivNeg(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x * 10).long() // -3).float() * 0.1


class CosSim(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.cosine_similarity(x * 1e-4, x.flip(0), dim=-1, eps=1e-3).unsqueeze(-1) * x


class SignBit(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(torch.signbit(torch.round(x)), -0.5 * x, x)


class LogCumSumExp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logcumsumexp(x * 100.0, dim=-1) * 0.01


class WeightedSmoothCE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.linspace(0.5, 2.0, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = x.argmax(-1).flip(0)
        return F.cross_entropy(x, target, weight=self.w, label_smoothing=0.2,
                               reduction="none").unsqueeze(-1) * x


class MultiLabel(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        loss = F.multilabel_soft_margin_loss(x * 100.0, (x.flip(0) > 0).float(), reduction="none")
        return loss.unsqueeze(-1) * 1e-3 * x


def cdist_l1() -> nn.Module: return _deep(lambda: CDist(1.0))                  # noqa: E704
def cdist_linf() -> nn.Module: return _shallow(lambda: CDist(float("inf")))    # noqa: E704
def cdist_l2() -> nn.Module: return _deep(lambda: CDist(2.0))                  # noqa: E704
def pairwise_l1() -> nn.Module: return _deep(PairwiseL1)                       # noqa: E704
def clamp_int() -> nn.Module: return _deep(lambda: ClampInt(-2.5))             # noqa: E704
def clamp_int_whole() -> nn.Module: return _deep(lambda: ClampInt(-2))         # noqa: E704
def floordiv_neg() -> nn.Module: return _shallow(FloorDivNeg)                  # noqa: E704
def cos_sim() -> nn.Module: return _deep(CosSim)                               # noqa: E704
def signbit() -> nn.Module: return _deep(SignBit)                              # noqa: E704
def logcumsumexp() -> nn.Module: return _shallow(LogCumSumExp)                 # noqa: E704
def ce_weighted_smooth() -> nn.Module: return _deep(WeightedSmoothCE)          # noqa: E704
def multilabel() -> nn.Module: return _deep(MultiLabel)                        # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


class Bucket(nn.Module):
    def __init__(self, top: Optional[int]) -> None:
        super().__init__()
        self.top = top

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp((x * 4 - 6).long(), min=-2.5, max=self.top)


class Bucketed(nn.Module):
    """a stem, ``bucket`` (an integer clamp with a float bound), then ``head`` reading it as float: the
    bucket's output has no ONNX value of its own when the exporter folds the promotion into the head."""

    def __init__(self, top: Optional[int]) -> None:
        super().__init__()
        self.stem = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(WIDTH, WIDTH), nn.GELU())])
        self.bucket = Bucket(top)
        self.head = nn.Linear(WIDTH, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.bucket(self.stem(x) * 3.0).float())


def bucketed() -> nn.Module:
    torch.manual_seed(0)
    return Bucketed(None).eval()


def bucketed_top() -> nn.Module:
    """the same with an integer upper bound too: the dynamo exporter cannot export the mixed bounds"""
    torch.manual_seed(0)
    return Bucketed(5).eval()


class Trilinear(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=2, mode="trilinear")


class Volume(nn.Module):
    """a Conv3d stem, then ``body``: a trilinear upsample (Jajal et al.'s 5-D form, opset 10)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv3d(2, 2, 3, padding=1)
        self.body = Trilinear()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def trilinear() -> nn.Module:
    torch.manual_seed(0)
    return Volume().eval()


def vol_inputs() -> torch.Tensor:
    return torch.randn(1, 2, 3, 4, 5)


class AmaxNaN(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(torch.log(x), -1, keepdim=True).nan_to_num(-7.0) + x


def amax_nan() -> nn.Module: return _deep(AmaxNaN)                           # noqa: E704
