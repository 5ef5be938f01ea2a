"""Upstream drift forms found for issue 30 point 8 (session 23), imported by drifttui as
``tests/causes/forms33.py:fn``.  None of them is in forms20/30/32, upstream.py, real.py or the
catalogue; each still reproduces with torch 2.13 / ONNX Runtime 1.32 (``test_forms33.py`` says
with which exporter).  The deep ones sit after forms30's 16-call stem and before a head, the
shallow ones after one Linear; the form is always the child ``body``:

* ``atan2_zero``: ``torch.atan2(y, x)`` where y is exactly 0 (pytorch/pytorch#162570,
  microsoft/onnxruntime#19003, microsoft/onnxscript#2557): the exporters' ``Atan(y / x)`` plus
  quadrant terms gives 0 or NaN where torch gives pi (x < 0) or 0 (x == 0);
* ``bce_pos_weight``: ``F.binary_cross_entropy_with_logits(pos_weight=...)`` of large logits:
  the lowerings compute ``Log(Sigmoid(x))`` and lose the stable form torch uses: -inf / NaN;
* ``bce_prob``: ``F.binary_cross_entropy`` of saturated probabilities: torch clamps each log at
  -100, the dynamo lowering does not (inf);
* ``erfc_log``: ``torch.log(torch.special.erfc(x))`` of large x: the dynamo lowering computes
  ``1 - Erf(x)``, 0 where torch's erfc is finite (-inf after the log);
* ``logaddexp2``: ``torch.logaddexp2`` of large arguments, lowered as ``Log2(2**a + 2**b)``: inf;
* ``sdpa_float_mask``: ``F.scaled_dot_product_attention`` with a float mask whose row is all
  ``-inf`` (pytorch/pytorch#159973's float-mask sibling): NaN rows in the file, zeros in torch;
* ``sign_nan``: ``torch.sign`` of NaN is 0 in torch, NaN in ONNX ``Sign``;
* ``maxpool_nan``: ``F.max_pool2d`` over NaN: ONNX Runtime's MaxPool drops NaN (the pooling sibling
  of microsoft/onnxruntime#10514); a runtime deviation no export changes;
* clean controls: ``atan2_plain`` (no zeros), ``bce_pos_weight_small`` (small logits).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class Atan2(nn.Module):
    def __init__(self, zeros: bool) -> None:
        super().__init__()
        self.zeros = zeros

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x - 1.0) if self.zeros else x + 0.1
        return torch.atan2(y, x.flip(0) - 0.5) * x


class BCEPosWeight(nn.Module):
    def __init__(self, gain: float) -> None:
        super().__init__()
        self.gain = gain
        self.register_buffer("pos_weight", torch.linspace(1.0, 4.0, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = (x.flip(0) > 0.5).float()
        return F.binary_cross_entropy_with_logits((0.5 - x) * self.gain, target, pos_weight=self.pos_weight,
                                                  reduction="none") * 0.01


class BCEProb(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = (x.flip(0) > 0.5).float()
        return F.binary_cross_entropy(torch.sigmoid(x * 60.0), target, reduction="none") * 0.01


class ErfcLog(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(torch.special.erfc(x * 20.0)) * 0.01


class LogAddExp2(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logaddexp2(x * 200.0, x.flip(-1) * 200.0) * 0.01


class FloatMaskAttention(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, d = x.shape
        q = x.view(1, n, 4, d // 4).transpose(1, 2)
        mask = torch.zeros(n, n)
        mask[0, :] = float("-inf")          # the first query attends to nothing (a padded position)
        mask[2:, 1] = float("-inf")
        y = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        return y.transpose(1, 2).reshape(n, d)


class SignNaN(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sign(torch.log(x - 0.5)) + x


class MaxPoolNaN(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool1d(torch.log(x - 0.5).unsqueeze(1), 2).nan_to_num(-5.0)
        return y.repeat_interleave(2, -1).squeeze(1) + x


def atan2_zero() -> nn.Module: return _deep(lambda: Atan2(True))                     # noqa: E704
def atan2_plain() -> nn.Module: return _deep(lambda: Atan2(False))                   # noqa: E704
def bce_pos_weight() -> nn.Module: return _deep(lambda: BCEPosWeight(40.0))          # noqa: E704
def bce_pos_weight_small() -> nn.Module: return _deep(lambda: BCEPosWeight(1.0))     # noqa: E704
def bce_prob() -> nn.Module: return _shallow(BCEProb)                                # noqa: E704
def erfc_log() -> nn.Module: return _deep(ErfcLog)                                   # noqa: E704
def logaddexp2() -> nn.Module: return _shallow(LogAddExp2)                           # noqa: E704
def sdpa_float_mask() -> nn.Module: return _deep(FloatMaskAttention)                 # noqa: E704
def sign_nan() -> nn.Module: return _shallow(SignNaN)                                # noqa: E704
def maxpool_nan() -> nn.Module: return _shallow(MaxPoolNaN)                          # noqa: E704


class EmptyBagMax(nn.Module):
    """``nn.EmbeddingBag(mode="max")`` over offsets that leave one bag empty: torch gives 0 there."""

    def __init__(self) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(10, WIDTH, mode="max")
        self.register_buffer("offsets", torch.tensor([0, 4, 4, 10, 16, 20]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = (x[:, :4] * 20.0).long().clamp(0, 9).reshape(-1)
        return self.bag(idx, self.offsets) + x


class ScatterMean(nn.Module):
    def __init__(self, include_self: bool) -> None:
        super().__init__()
        self.include_self = include_self
        self.register_buffer("index", torch.tensor([[0, 1, 0, 2, 1, 0, 3, 3]]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = self.index.expand(x.shape[0], 8)
        y = torch.full((x.shape[0], 4), 0.5).scatter_reduce(1, idx, x[:, :8] * 10.0, "mean",
                                                             include_self=self.include_self)
        return y.repeat(1, WIDTH // 4) + x


class LogNdtr(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.log_ndtr(-(x + 0.5) * 60.0) * 0.01


class Erfcx(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.erfcx(x.abs() * 30.0) * x


class ArgmaxNaN(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x + 0.2).argmax(-1, keepdim=True).float() * 0.1 + x


def empty_bag_max() -> nn.Module: return _deep(EmptyBagMax)                          # noqa: E704
def scatter_mean() -> nn.Module: return _deep(lambda: ScatterMean(True))              # noqa: E704
def scatter_mean_noself() -> nn.Module: return _shallow(lambda: ScatterMean(False))  # noqa: E704
def log_ndtr() -> nn.Module: return _deep(LogNdtr)                                   # noqa: E704
def erfcx() -> nn.Module: return _shallow(Erfcx)                                     # noqa: E704
def argmax_nan() -> nn.Module: return _deep(ArgmaxNaN)                               # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
