"""Held-out batch Z for issue 30 point 8 (session 38): a blind first-run measurement from a fresh angle, **the opsets
users pin**.  Deployers pass ``opset_version=11 .. 17`` to the TorchScript exporter (TensorRT, older ONNX Runtime
builds, edge runtimes), and a symbolic function for an older opset often takes another path.  Screened with torch
2.13 / ONNX Runtime 1.32, the TorchScript exporter at opsets 11, 12, 13, 14, 16, 17 (and 18, 19, 20 as the
reference) and the dynamo exporter at its default (and at pinned opsets: it exports at 18 and converts down), on
(6, 32) rows, after grepping every earlier suite (forms*.py and their screened lists, fx_forms, drifted, real,
upstream, test_upstream_drifts, benchmarks/causes_forms.py: none pins an opset except real.py / upstream.py's opset
9-11 Resize / Upsample / scatter / index_put and forms32's opset-10 trilinear) and upstream threads
(pytorch/pytorch, microsoft/onnxruntime, onnx/onnx).  Written before the engine ran on any of them
(/tmp/heldZ/judge.md of session 38): the first run's table is in test_forms40z.py.  Screening took about 35 minutes
(fourteen rounds, some 400 exports).

Screened and matching at every pinned opset (exact, or within 3e-7 relative), so not kept:
* normalization and interpolation: ``softmax`` / ``log_softmax`` over dim 1 and dim 0 of 3-D tensors at opsets 11 /
  12 (the exporter transposes the axis last before the opset-11 Softmax's 2-D coercion; onnx/onnx#5655,
  microsoft/onnxruntime#25402 are runtimes that coerce wrongly), ``LayerNorm`` decomposed below 17 (float32, and
  float16 at a level of 20 and of 1000: within the float16 budget; ONNX Runtime fuses it back), ``GroupNorm`` /
  ``InstanceNorm`` in float16, ``gelu`` (exact and tanh) decomposed below 20, ``hardswish`` as ``x * HardSigmoid``
  below 14, ``grid_sample`` (bilinear / nearest / bicubic, three paddings, both ``align_corners``) at 16 and 20,
  ``avg_pool2d`` / ``avg_pool1d`` with ``ceil_mode`` and ``count_include_pad`` at 11 / 17 / 19 / 20, ``lp_pool2d``
  p = 1 / 2 / 3, ``adaptive_avg_pool2d``, ``interpolate`` bicubic (down, and up with ``align_corners``), bilinear
  to a height of 1, ``area``;
* attention masking: ``scaled_dot_product_attention`` with a bool mask, a float mask, ``is_causal`` and ``scale=``
  at 14 / 16 / 17 / 20, a ``triu`` mask filled with ``-inf`` before a softmax, ``logsumexp`` of a row masked whole;
* arithmetic and integer conversions: ``clamp`` of int64 within 2**24 (and by int tensors), ``round(decimals=2)``,
  ``div(rounding_mode="floor")`` / ``remainder`` of negative int64, ``fmod``, ``>>`` / ``<<`` of int64,
  ``relu6`` of ints, ``sign`` / ``maximum`` / ``clamp`` of NaN (NaN on both sides), ``where`` on a float condition,
  ``celu`` at 12 (refused at 11), int64 ``x ** 2`` within 2**24;
* distance, loss and cumulative: ``cosine_similarity`` (unit and 1e-20 vectors), ``pairwise_distance``, ``norm(p=1)``,
  ``std`` of a level, ``mse`` / ``kl_div`` / ``cross_entropy`` / ``nll_loss(ignore_index)`` / weighted
  ``cross_entropy`` at 12 .. 20 (refused at 11), ``binary_cross_entropy_with_logits(pos_weight)``, ``EmbeddingBag``
  mean / sum, int32 ``sum`` (promoted on both sides), ``cumsum`` of floats;
* refused by the TorchScript exporter at every opset (nothing to measure): ``trunc``, ``frac``, ``l1_loss``,
  ``smooth_l1_loss``, ``huber_loss``, ``cumprod``, ``cummax``, ``logcumsumexp``, ``binary_cross_entropy``, ``tril``
  below 14, int ``&`` / ``|`` / ``^`` / ``~`` (and ``bitwise_and`` below 18);
* drifting, but a mechanism the suites hold (not kept): int32 ``cumsum`` past 2**31 (TorchScript at every opset,
  pytorch/pytorch#77842; forms35), ``GroupNorm`` / ``InstanceNorm`` of offset values (forms36),
  ``cross_entropy(label_smoothing=0.1)`` (dynamo; forms30), ``EmbeddingBag(mode="max")`` with an empty bag
  (TorchScript; forms33), ``divisor_override`` ignored by both (forms35), ``argmax`` of NaN rows (forms_nan),
  ``binary_cross_entropy_with_logits`` of 40x logits (upstream.py's ``bce``), a float ``div(rounding_mode="trunc")``
  past 2**63 through an int64 Cast (too far out to keep);
* noticed, not kept: the dynamo exporter at ``opset_version=11 / 12 / 13`` exports at 18 and asks onnx's C-API version
  converter to go down; its Softmax / LogSoftmax 13 -> 12 adapter keeps the node as it is, so a softmax over dim 1
  of a 4-D tensor becomes a softmax over the flattened C x H x W (0.42 off on a Conv + Softmax(dim=1) net), but
  the converter has no down-adapter for Relu-14, Tanh-13, Div-14, Identity-16, ... so any real model stays at
  opset 18 (a warning only) and computes right: not reachable enough to keep.

What drifts, and is kept (each with the TorchScript exporter at opset 11 only: exact at 12 and above, and exact with
the dynamo exporter at its default, whose files are the clean contrast; no earlier suite pins opset 11 on them):
1. **``>=`` / ``<=`` of NaN at opset 11.**  ``GreaterOrEqual`` / ``LessOrEqual`` are opset-12 ops
   (pytorch/pytorch#38226 added them to the exporter); at opsets 9 .. 11 ``symbolic_opset9.ge`` / ``le`` lower
   ``a >= b`` as ``Not(Less(a, b))`` and ``a <= b`` as ``Not(Greater(a, b))``.  For a NaN, ``Less`` is false, so
   the file says NaN >= b is true where torch says false: a validity mask written ``(d >= near) & (d <= far)``
   lets NaN through.  NaN marks a missing value in depth maps (ROS / Kinect depth images), time series and label
   tables, exactly where such masks are written.
   drifttui refuses inputs that hold NaN (exit 2), so the NaN is made in the model, by a 0 / 0 where nothing was
   observed, as fusion and averaging code makes it.
   * ``depth_fill`` (distance, deep: 20 module calls): two depth views fused by confidence, ``(w1 d1 + w2 d2) /
     (w1 + w2)``, a pixel neither view saw 0 / 0 (a NaN hole); the valid pixels ``near <= d <= far``, each hole
     filled with the mean of the row's valid depths; then 16 Linear / GELU calls around a skip, and a head.
     Control: ``depth_fill_dense`` (the same model on views that leave no pixel unseen, only out-of-range ones).
   * ``nan_target_loss`` (loss, deep: 20 module calls): a regressor's masked mean squared error against targets that
     are each item's mean rating, ``rating_sum / raters`` (an unrated item 0 / 0: NaN), ``valid = target >= 0``.
2. **int64 through float32 at opset 11.**  ONNX ``Max`` / ``Min`` / ``Clip`` take integers from opset 12 and ``Pow``
   from 12; below, ``symbolic_helper._op_with_optional_float_cast`` wraps ``Max`` / ``Min`` / ``Clip`` in
   ``Cast(float) .. Cast(int64)`` (``opset_before=12``) and ``symbolic_opset9.pow`` casts an integer base to float
   and leaves the result float (pytorch/pytorch#52646 removed the Cast back).  float32 holds integers exactly only
   to 2**24: int64 past it come back rounded.  (forms39's ``time_bucket`` is the dynamo exporter dividing int64
   through a float at its default opset; here the TorchScript exporter at its default is exact and only the pinned
   opset goes through float.)
   * ``time_gaps`` (integer conversion, deep: 21 module calls): int64 millisecond timestamps (1.7e12), each event
     clamped to the session's start with ``torch.maximum``, the gaps in seconds bucketed and embedded (a session
     recommender's time features).  float32 holds 1.7e12 to 131072 ms.  Controls: ``time_gaps`` with the dynamo
     exporter; ``time_gaps_rel`` (timestamps relative to the session start, under 2**24).
   * ``pair_hash`` (integer conversion, shallow): a feature cross of two int64 ids hashed by Szudzik's pairing
     ``a ** 2 + a + b`` (or ``a + b ** 2``) modulo 997 into [0, 1) features (forms39's ``hash_pow`` shape).  Control:
     ``pair_hash_small`` (ids under 4096: squares under 2**24).
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import DEPTH

WIDTH = 32
NEAR, FAR = 0.3, 8.0
MS = 1_700_000_000_000      # a millisecond timestamp (2023-11)
BUCKETS = 997


def _stem() -> nn.Sequential:
    return nn.Sequential(*[m for _ in range(DEPTH // 2) for m in (nn.Linear(WIDTH, WIDTH), nn.GELU())])


class DepthFill(nn.Module):
    """two depth views fused by confidence, ``(w1 d1 + w2 d2) / (w1 + w2)`` (a pixel no view saw is 0 / 0: NaN, a
    hole); the valid pixels ``near <= d <= far``, each hole filled with the mean of the row's valid depths."""

    def forward(self, d: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        fused = (w * d).sum(1) / w.sum(1)
        valid = (fused >= NEAR) & (fused <= FAR)
        kept = torch.where(valid, fused, torch.zeros_like(fused))
        mean = kept.sum(-1, keepdim=True) / valid.sum(-1, keepdim=True).clamp(min=1)
        return torch.where(valid, fused, mean)


class DepthNet(nn.Module):
    """``body`` (the fusion and hole filling), then 16 Linear / GELU calls around a skip, and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.stem, self.head = DepthFill(), _stem(), nn.Linear(WIDTH, 8)

    def forward(self, d: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = self.body(d, w) / FAR
        return self.head(self.stem(h) + h)


class MaskedMSE(nn.Module):
    """the targets are the mean rating of each item's raters, ``rating_sum / raters`` (an item nobody rated: 0 / 0,
    NaN); the mean squared error over the rated items of each row, ``valid = target >= 0``."""

    def forward(self, pred: torch.Tensor, rating_sum: torch.Tensor, raters: torch.Tensor) -> torch.Tensor:
        target = rating_sum / raters
        valid = target >= 0
        err = torch.where(valid, pred - target, torch.zeros_like(pred))
        return (err * err).sum(-1) / valid.sum(-1).clamp(min=1)


class Regressor(nn.Module):
    """16 Linear / GELU calls, a projection to 8 targets, and ``body``: the masked loss per row."""

    def __init__(self) -> None:
        super().__init__()
        self.stem, self.proj, self.body = _stem(), nn.Linear(WIDTH, 8), MaskedMSE()

    def forward(self, x: torch.Tensor, rating_sum: torch.Tensor, raters: torch.Tensor) -> torch.Tensor:
        return self.body(self.proj(self.stem(x)), rating_sum, raters)


class TimeGaps(nn.Module):
    """int64 ms timestamps: each event clamped to the session start (``torch.maximum``), the gaps in seconds
    bucketed (0 .. 63) and embedded, the embeddings averaged."""

    def __init__(self) -> None:
        super().__init__()
        self.gap = nn.Embedding(64, WIDTH)

    def forward(self, ts: torch.Tensor) -> torch.Tensor:
        t = torch.maximum(ts, ts[:, :1])
        seconds = (t[:, 1:] - t[:, :-1]) // 1000
        return self.gap(seconds.clamp(0, 63)).mean(1)


class SessionNet(nn.Module):
    """``body`` (the time features), then 16 Linear / GELU calls around a skip, and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.stem, self.head = TimeGaps(), _stem(), nn.Linear(WIDTH, 8)

    def forward(self, ts: torch.Tensor) -> torch.Tensor:
        h = self.body(ts)
        return self.head(self.stem(h) + h)


class PairHash(nn.Module):
    """feature crosses of int64 id pairs by Szudzik's pairing, ``a ** 2 + a + b`` if a >= b else ``a + b ** 2``,
    hashed modulo 997 into [0, 1) features."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        a, b = ids[:, 0::2], ids[:, 1::2]
        paired = torch.where(a >= b, a ** 2 + a + b, a + b ** 2)
        return (paired % BUCKETS).float() / BUCKETS


class CrossNet(nn.Module):
    """``body`` (16 hashed crosses), then one Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = PairHash(), nn.Linear(16, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(ids))


def _seeded(make) -> nn.Module:
    torch.manual_seed(0)
    return make().eval()


def depth_fill() -> nn.Module: return _seeded(DepthNet)                 # noqa: E704
def depth_fill_dense() -> nn.Module: return _seeded(DepthNet)           # noqa: E704
def nan_target_loss() -> nn.Module: return _seeded(Regressor)           # noqa: E704
def time_gaps() -> nn.Module: return _seeded(SessionNet)                # noqa: E704
def time_gaps_rel() -> nn.Module: return _seeded(SessionNet)            # noqa: E704
def pair_hash() -> nn.Module: return _seeded(CrossNet)                  # noqa: E704
def pair_hash_small() -> nn.Module: return _seeded(CrossNet)            # noqa: E704


def _views(holes: float) -> tuple[torch.Tensor, torch.Tensor]:
    """two depth views of a row in metres, 0.05 .. 10 (some out of range), and their confidences; a share ``holes``
    of the pixels seen by neither view (both weights 0)."""
    d = torch.rand(6, 2, WIDTH) * 9.95 + 0.05
    w = torch.rand(6, 2, WIDTH) * (torch.rand(6, 2, WIDTH) < 0.6)
    w[:, 0] = torch.where(w[:, 0] + w[:, 1] == 0, torch.full_like(w[:, 0], 0.5), w[:, 0])
    unseen = (torch.rand(6, 1, WIDTH) < holes).expand(6, 2, WIDTH)
    return d, torch.where(unseen, torch.zeros_like(w), w)


def depth_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return _views(0.17)


def depth_dense_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return _views(0.0)


def target_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """features, and per row 8 items' rating sums and rater counts (0 .. 4 raters: about one item in five unrated)."""
    raters = torch.randint(0, 5, (6, 8)).float()
    return torch.randn(6, WIDTH), (torch.rand(6, 8) * 5 * raters).round(), raters


def _sessions(start: int) -> torch.Tensor:
    """16 events per session, gaps of 0.2 .. 60 s, a few logged up to 5 s before the session's first event."""
    gaps = (torch.rand(6, 16) * 59_800 + 200).long()
    ts = start + torch.cumsum(gaps, -1) + torch.randint(0, 10**6, (6, 1))
    early = torch.rand(6, 16) < 0.15
    early[:, 0] = False
    return torch.where(early, ts[:, :1] - torch.randint(1, 5000, (6, 16)), ts)


def timestamp_inputs() -> torch.Tensor:
    return _sessions(MS)


def relative_inputs() -> torch.Tensor:
    return _sessions(0)


def id_inputs() -> torch.Tensor:
    """16 id pairs per row, 10**4 .. 10**6 (a user and an item, a query and a document, ...)."""
    return torch.randint(10**4, 10**6, (6, 32))


def small_id_inputs() -> torch.Tensor:
    return torch.randint(0, 4096, (6, 32))
