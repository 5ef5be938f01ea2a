"""Upstream drift forms found for issue 30 point 8 in session 24 (tests/causes/forms34.py), none of them in
forms20/30/32/33, upstream.py, real.py or the catalogue; each still reproduces with torch 2.13 / ONNX
Runtime 1.32 (``test_forms34.py`` says with which exporter).  The deep ones sit after forms30's 16-call
stem and before a head, the shallow ones after one Linear; the form is always the child ``body``:

* ``remainder_phase``: ``torch.remainder(t, 0.3)`` of values on multiples of the divisor (a periodic
  phase; pytorch/pytorch#121224, #37743): torch computes ``fmod`` and moves its sign, both lowerings
  compute ``t - Floor(t / 0.3) * 0.3``: 0 where torch gives 0.3 (or the reverse);
* ``baddbmm_attention``: attention scores ``torch.baddbmm(bias, q, k^T, beta=0, alpha=scale)`` (the
  diffusers ``get_attention_scores`` pattern) over a bias holding -inf / NaN: torch ignores the input
  when beta is 0 (its documented contract; pytorch/pytorch#96037, #187521), both lowerings add
  ``0 * bias``: NaN rows after the softmax;
* ``addmv_beta0``: ``torch.addmv(bias, m, v, beta=0)``, the matrix-vector sibling (dynamo);
* ``var_small_group``: ``torch.var(..., correction=3)`` over groups of 2: torch divides by
  ``max(0, N - correction)`` (inf; pytorch/pytorch#109186, NVIDIA/Fuser#873), the lowerings by
  ``N - correction`` (a negative variance, NaN after the rsqrt where torch gives 0);
* ``cos_embedding``: ``F.cosine_embedding_loss`` of tiny embeddings: torch adds 1e-12 to each
  squared norm (pytorch/pytorch#5447); the dynamo exporter's ONNX optimizer drops both Adds (it
  takes an Add of 1e-12 for an identity), so the file divides by the bare norms;
* ``cdist_p3`` / ``cdist_p0``: ``torch.cdist`` at p values forms32 does not have (3, 0): the
  TorchScript lowering raises a negative difference to the power p (NaN);
* ``ce_ignore_smooth``: ``F.cross_entropy(ignore_index=-100, label_smoothing=0.2)``: torchlib
  smooths the ignored rows too;
* clean controls: ``remainder_plain`` (no value on a multiple), ``baddbmm_finite`` (beta 0 over a
  finite bias), ``var_plain`` (correction 1 over groups of 4), ``cos_embedding_plain`` (unit-size
  embeddings).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class Remainder(nn.Module):
    def __init__(self, on_multiples: bool) -> None:
        super().__init__()
        self.on_multiples = on_multiples

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.round(x * 100.0) * 0.3 if self.on_multiples else x * 3.0
        return torch.remainder(t, 0.3) * 3.0 + x


class BaddbmmAttention(nn.Module):
    """q, k, v projections and scores by ``baddbmm(bias, q, k^T, beta=0)``: the bias is never read."""

    def __init__(self, finite: bool) -> None:
        super().__init__()
        self.finite = finite
        self.q, self.k, self.v = (nn.Linear(WIDTH, WIDTH) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        q, k, v = (p(x).view(n, 4, 8).transpose(0, 1) for p in (self.q, self.k, self.v))
        # a scratch buffer: torch.empty in the original; here made of the input, -inf / NaN in places
        bias = torch.log(x[:n, :n].abs() + 0.5) if self.finite else torch.log(x[:n, :n] - 0.2)
        scores = torch.baddbmm(bias.expand(4, n, n), q, k.transpose(1, 2), beta=0.0, alpha=8 ** -0.5)
        return (scores.softmax(-1) @ v).transpose(0, 1).reshape(n, WIDTH) + x


class AddmvBeta0(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = torch.log(x[:, 0] - 0.2)
        return torch.addmv(bias, x, x[0], beta=0.0).unsqueeze(-1) * 0.1 + x


class SmallGroupVar(nn.Module):
    def __init__(self, group: int, correction: int) -> None:
        super().__init__()
        self.group, self.correction = group, correction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = x.view(x.shape[0], -1, self.group)
        var = torch.var(g, dim=-1, correction=self.correction, keepdim=True)
        return (g * torch.rsqrt(var + 1e-3)).reshape(x.shape)


class CosEmbedding(nn.Module):
    def __init__(self, size: float) -> None:
        super().__init__()
        self.size = size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = torch.where(x[:, 0] > 0, 1.0, -1.0)
        loss = F.cosine_embedding_loss(x * self.size, x.flip(0), target, margin=0.1, reduction="none")
        return loss.unsqueeze(-1) * x


class CDist(nn.Module):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p
        self.prototypes = nn.Parameter(torch.randn(WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = (torch.round(x), torch.round(self.prototypes)) if self.p == 0 else (x, self.prototypes)
        return torch.cdist(a, b, p=self.p) * 0.1


class IgnoreSmoothCE(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = x.argmax(-1).flip(0)
        target = torch.where(x[:, 1] > 0.5, -100, target)
        return F.cross_entropy(x, target, label_smoothing=0.2, reduction="none").unsqueeze(-1) * x


def remainder_phase() -> nn.Module: return _deep(lambda: Remainder(True))                  # noqa: E704
def remainder_plain() -> nn.Module: return _deep(lambda: Remainder(False))                 # noqa: E704
def baddbmm_attention() -> nn.Module: return _deep(lambda: BaddbmmAttention(False))        # noqa: E704
def baddbmm_finite() -> nn.Module: return _deep(lambda: BaddbmmAttention(True))            # noqa: E704
def addmv_beta0() -> nn.Module: return _shallow(AddmvBeta0)                                # noqa: E704
def var_small_group() -> nn.Module: return _deep(lambda: SmallGroupVar(2, 3))              # noqa: E704
def var_plain() -> nn.Module: return _deep(lambda: SmallGroupVar(4, 1))                    # noqa: E704
def cos_embedding() -> nn.Module: return _shallow(lambda: CosEmbedding(1e-8))              # noqa: E704
def cos_embedding_plain() -> nn.Module: return _shallow(lambda: CosEmbedding(1.0))         # noqa: E704
def cdist_p3() -> nn.Module: return _deep(lambda: CDist(3.0))                              # noqa: E704
def cdist_p0() -> nn.Module: return _shallow(lambda: CDist(0.0))                           # noqa: E704
def ce_ignore_smooth() -> nn.Module: return _deep(IgnoreSmoothCE)                          # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
