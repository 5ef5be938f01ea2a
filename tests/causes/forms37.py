"""Upstream drift forms found for issue 30 point 8 in session 27: ONNX Runtime kernels that compute otherwise
than torch's (reductions over many elements, a grid sampled at NaN coordinates) and a loss torchlib lowers
wrong; none of them in forms20/30/32-36, forms_special / forms_nan / forms_dof, upstream.py, real.py or the
catalogue.  Each still reproduces with torch 2.13 / ONNX Runtime 1.32 (``test_forms37.py`` says with which
exporter).  The deep ones sit after forms30's 16-call stem and before a head, the shallow ones after one
Linear; the form is always the child ``body``:

* ``pool_level`` / ``pool1d_level``: ``F.adaptive_avg_pool2d(fmap, 1)`` / ``F.adaptive_avg_pool1d(seq, 1)``
  (a global average pool) of a 128 x 128 map / a 16384-long sequence holding a common level, the level taken
  off after (a centred squeeze-excitation statistic).  torch sums with a cascade of partial sums; ONNX
  Runtime's ``GlobalAveragePool`` / ``ReduceMean`` accumulate the float32 sum sequentially and lose ~1e-5 of
  it (microsoft/onnxruntime#12043: GlobalAveragePool of a large map; #28450: ReduceSum of a large float32
  tensor, where a float64 reduction cast back to float32 matches PyTorch);
* ``token_mean``: ``torch.mean`` over 8192 positions of a sequence (dim 1, not the innermost) with a level;
* ``long_logsumexp``: ``torch.logsumexp`` over 131072 logits (``ReduceLogSumExp``'s sum of exponentials);
* ``warp_nan``: ``F.grid_sample`` of a grid made of unit flow directions, ``d / |d|``, NaN where a direction is
  0 (0 / 0), the invalid samples zeroed after (``nan_to_num``): torch's kernel propagates the NaN coordinate
  to the sampled value (zeroed), ONNX Runtime's ``GridSample`` samples a pixel there (kept);
* ``multilabel``: ``F.multilabel_margin_loss``: torch reads each row's targets up to the first -1; the dynamo
  exporter's lowering computes otherwise (torch has a decomposition of the op since pytorch/pytorch#105559);
  the TorchScript exporter cannot export it;
* clean controls: ``pool_plain`` (no level), ``warp_plain`` (no direction 0), ``token_mean_short`` (64
  positions).

Written after the first run and the mechanisms it led to, as held-out checks of them (not counted in the first
run): ``score_sum`` (``Tensor.sum`` of a long row of scores), ``long_norm`` (``torch.linalg.vector_norm`` of a
long vector), ``warp3d`` (a volume sampled along unit 3-D directions, NaN zeroed),
``multilabel_mean`` (the loss with three targets per row, reduction ``mean``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class LevelPool(nn.Module):
    """a global average pool of ``x`` tiled into a 2 x 128 x 128 map (1-D: 2 x 16384) over ``level``."""

    def __init__(self, level: float, dims: int = 2) -> None:
        super().__init__()
        self.level, self.dims = level, dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        tiled = x.abs().view(n, 2, 16).repeat(1, 1, 1024) + self.level
        if self.dims == 2:
            pooled = F.adaptive_avg_pool2d(tiled.view(n, 2, 128, 128), 1).view(n, 2)
        else:
            pooled = F.adaptive_avg_pool1d(tiled, 1).view(n, 2)
        return x + (pooled - self.level).repeat(1, WIDTH // 2) * 3.0


class TokenMean(nn.Module):
    """the mean over ``tokens`` positions of a sequence ramped from ``x`` over a level (dim 1)."""

    def __init__(self, tokens: int, level: float) -> None:
        super().__init__()
        self.tokens, self.level = tokens, level

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ramp = torch.linspace(0.5, 1.5, self.tokens).view(1, -1, 1)
        seq = x.abs().unsqueeze(1) * ramp + self.level
        return x + (seq.mean(1) - self.level) * 4.0


class LongLogSumExp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + (torch.logsumexp(x.abs().repeat(1, 4096), -1, keepdim=True) - 12.4) * 20.0


class Warp(nn.Module):
    """an image warped along unit flow directions ``d / |d|`` (NaN where d = 0 when ``cut``), NaN samples zeroed."""

    def __init__(self, cut: bool) -> None:
        super().__init__()
        self.cut = cut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        d = x.flip(0).view(n, 16, 2)
        d = torch.relu(d - 0.3) if self.cut else d + 0.05 * torch.sign(d) + 0.01
        unit = d / d.norm(dim=-1, keepdim=True)
        y = F.grid_sample(x.view(n, 2, 4, 4), (unit * 0.9).view(n, 4, 4, 2), align_corners=False)
        return torch.nan_to_num(y, nan=0.0).reshape(n, WIDTH)     # an invalid warp: no value


class MultiLabel(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = torch.full_like(x, -1, dtype=torch.long)
        target[:, 0] = x[:, :3].argmax(-1)
        target[:, 1] = x[:, 3:6].argmax(-1) + 3
        loss = F.multilabel_margin_loss(x, target, reduction="none")
        return x * loss.unsqueeze(-1)


def pool_level() -> nn.Module: return _deep(lambda: LevelPool(100.0))                  # noqa: E704
def pool_plain() -> nn.Module: return _deep(lambda: LevelPool(0.0))                    # noqa: E704
def pool1d_level() -> nn.Module: return _shallow(lambda: LevelPool(100.0, 1))          # noqa: E704
def token_mean() -> nn.Module: return _deep(lambda: TokenMean(8192, 50.0))             # noqa: E704
def token_mean_short() -> nn.Module: return _deep(lambda: TokenMean(64, 50.0))         # noqa: E704
def long_logsumexp() -> nn.Module: return _shallow(LongLogSumExp)                      # noqa: E704
def warp_nan() -> nn.Module: return _deep(lambda: Warp(True))                          # noqa: E704
def warp_plain() -> nn.Module: return _deep(lambda: Warp(False))                       # noqa: E704
def multilabel() -> nn.Module: return _shallow(MultiLabel)                             # noqa: E704


class ScoreSum(nn.Module):
    """held out: the total of a long row of attention-like scores over a level, centred."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = torch.sigmoid(x).repeat(1, 2048) + 20.0
        return x + (scores.sum(-1, keepdim=True) - 1343488.0) * 0.05


class LongNorm(nn.Module):
    """held out: the L2 norm of a long feature vector (``torch.linalg.vector_norm``) over a level, centred."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = x.abs().repeat(1, 4096) + 10.0
        return x + (torch.linalg.vector_norm(v, dim=-1, keepdim=True) - 3880.0) * 0.2


class Warp3d(nn.Module):
    """held out: a volume sampled trilinearly along unit 3-D directions ``d / |d|``, NaN samples zeroed."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        d = torch.relu(x[:, :24].flip(0).reshape(n, 2, 2, 2, 3) - 0.2)
        grid = d / d.norm(dim=-1, keepdim=True) * 0.8
        y = F.grid_sample(x.view(n, 1, 2, 4, 4), grid, align_corners=True)
        return x + torch.nan_to_num(y, nan=0.0).reshape(n, 8).repeat(1, 4)


class MultiLabelMean(nn.Module):
    """held out: the mean multi-label margin loss of rows with three targets, as a gain."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = torch.full_like(x, -1, dtype=torch.long)
        target[:, :3] = torch.topk(x, 3, -1).indices
        return x * (1.0 + F.multilabel_margin_loss(x * 2.0, target))


def score_sum() -> nn.Module: return _deep(ScoreSum)                                   # noqa: E704
def long_norm() -> nn.Module: return _shallow(LongNorm)                                # noqa: E704
def warp3d() -> nn.Module: return _deep(Warp3d)                                       # noqa: E704
def multilabel_mean() -> nn.Module: return _deep(MultiLabelMean)                       # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
