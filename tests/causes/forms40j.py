"""Held-out batch J for issue 30 point 8 (session 31): a blind first-run measurement, screened with torch 2.13 /
ONNX Runtime 1.32, both exporters at their default opset, on (6, 32) rows, after grepping every earlier suite
(forms*.py including forms40d/f/g/h/i and forms_qat's screened lists, fx_forms, drifted, real, upstream,
test_upstream_drifts).  Written before the engine ran on any of them: the first run's table is in test_forms40j.py.
Screening was time-boxed (about 20 minutes, three rounds).  No new drift was found in attention masking, arithmetic or
integer conversions (below), so the batch holds loss, cumulative and distance forms; all sit in deep models.

Screened and matching (or within drifttui's tolerance), so not kept:
* attention masking: SDPA ``is_causal`` with 6 queries against 12 keys (a KV cache), SDPA with ``scale=``, an
  additive ``-1e30`` head bias, a T5 relative-position bucket (``log(rel / 8) / log(16) * 8`` then ``.long()``,
  the integer conversion inside T5's attention bias): all exact;
* arithmetic: ``sin`` of 1e4-scaled values, a diffusion timestep embedding (``sin`` / ``cos`` of up to 1000 x
  frequencies; dynamo 2.5e-4 relative, at the tolerance), ``lerp`` of 1e4 values at weight 0.9 (1 ulp),
  ``gelu(approximate="tanh")`` of large negatives, ``hardswish`` on its breakpoints, ``rrelu`` in eval
  (TorchScript; dynamo fails to export), ``vector_norm(ord=0.5)``, ``renorm`` (dynamo); ``exp2``,
  ``float_power``, ``erfinv``, ``i0`` and ``cumulative_trapezoid`` do not export with TorchScript (dynamo: exact or
  fails);
* distance: ``F.normalize(p=1)`` of 1e-13 rows, ``pairwise_distance`` of near duplicates with ``eps=1e-6``
  (TorchScript adds ``eps`` to ``x1`` before the difference: 1.5e-5 absolute, only a made-up factor shows it);
* loss: ``kl_div(log_target=True)``, ``cross_entropy`` with class weights, ``l1_loss`` (dynamo; TorchScript: not
  supported);
* cumulative: position ids ``mask.long().cumsum(-1) - 1`` (exact);
* integer conversions: float -> uint8 of negatives, NaN -> bool, ``nan_to_num`` then int32, int8 -> uint8, an int64
  ``clamp``, ``round().long()`` of half-steps, int64 + 2**40 -> float32, float8 e4m3 / e5m2 casts with saturation
  and rounding (dynamo exact; TorchScript: "not a valid JitScalarType"); ``searchsorted(right=True)`` exports with
  neither;
* drifting, but a form the suites hold (not kept): ``logaddexp2`` / ``special.ndtr`` / ``log_ndtr`` / ``xlog1py``
  (dynamo; forms33, forms40d/h), ``atan2`` of zeros (forms33), ``binary_cross_entropy_with_logits(pos_weight=)``
  (forms33), ``multilabel_soft_margin_loss`` of large logits (forms32), ``poisson_nll_loss(log_input=False)``
  (forms36), ``multilabel_margin_loss`` with ``-1``-padded targets (dynamo: the decomposition counts the slots after
  the first ``-1``; forms37 holds it: it was run once in this batch before the repeat was seen, and the engine
  answered it right, a verified ``lowering`` and a repaired file; not counted), ``cross_entropy(label_smoothing=, weight=)`` (dynamo: ``SoftmaxCrossEntropyLoss`` drops the smoothing,
  forms30's ``ce_smooth``), a float16 ``softmax(dtype=torch.float32)`` (forms40d), ``rsqrt`` of a variance
  (dynamo: forms_dof), a reversed ``cumsum`` on a level (forms40i's ``window_mean``).

Kept (each drifts over drifttui's default tolerance with the exporters named):
* ``focal_loss`` (loss, deep, both exporters): torchvision's ``sigmoid_focal_loss`` written out,
  ``ce = binary_cross_entropy_with_logits(x, t); p_t = p t + (1 - p)(1 - t); ce (1 - p_t)^2`` of confident
  logits.  Without ``pos_weight`` both exporters still lower BCE-with-logits through ``Log(Sigmoid(x))`` and
  ``Log(1 - Sigmoid(x))`` (pytorch/pytorch#14830 for the log-sigmoid symbolic; microsoft/onnxscript's torchlib
  the same), inf / NaN where torch's kernel (``max(x, 0) - x t + log1p(exp(-|x|))``) is finite.  A new form of the
  mechanism forms33's ``bce_pos_weight`` holds (here without ``pos_weight``, and the focal factor on top).  Control:
  ``focal_loss_small`` (unit logits).
* ``half_cumsum`` (cumulative, deep, TorchScript; dynamo's file is refused by ONNX Runtime): ``cumsum`` of float16
  activations on a level of 10, the level taken off after (the float16 cumsum of pytorch/pytorch#180150; ONNX's
  float16 CumSum, microsoft/onnxruntime#6355).  torch rounds each float16 op (``* 4``, ``+ 10``) and its CPU
  ``cumsum`` accumulates in float32, rounding each output once; ONNX Runtime's CPU float16 ``CumSum`` accumulates in
  float32 too (a standalone CumSum matched float32 accumulation exactly), but the float16 ``Mul`` / ``Add`` before
  it run through float32 Casts ONNX Runtime inserts, their rounding dropped (microsoft/onnxruntime#8787), and the
  running sum carries 32 such differences.  The judge's first note (written before the run) said float16
  accumulation; the standalone CumSum showed otherwise, so the note was corrected after the run to the dropped
  rounding (forms40d/h's float16 family, here amplified by the scan).
* ``prefix_variance`` (cumulative, deep, both exporters): a running variance by prefix sums,
  ``E[x^2] - E[x]^2`` over windows of 8 from ``cumsum(s)`` and ``cumsum(s * s)`` on a level of 30 (the integral-image
  variance trick).  ONNX Runtime's float32 ``CumSum`` against torch's double accumulation, cancelled up by the
  difference of two large windowed means.  Control: ``prefix_variance_flat`` (level 0).
* ``self_cdist`` (distance, deep, TorchScript): ``torch.cdist(x, x)`` of 36 rows against themselves (a
  self-similarity or k-NN graph).  With more than 25 rows torch's CPU ``cdist`` takes the matrix-product route
  ``|a|^2 + |b|^2 - 2 a.b`` (pytorch/pytorch#42479, #57690), and the TorchScript symbolic writes the same route
  (``Pow``, ``ReduceSum``, ``MatMul``, ``Max``, ``Sqrt``); the diagonal, 0 by definition, is a cancellation that
  each side rounds otherwise (torch's own float32 result is 8e-4 off its float64 value).  A new form of forms40f's
  ``cdist_mm`` (there: offset points against prototypes): no file computes torch's float32 rounding.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep

WIDTH = 32


class FocalLoss(nn.Module):
    """torchvision's ``sigmoid_focal_loss`` (gamma 2, no alpha) of ``gain`` x the features against a flipped sign."""

    def __init__(self, gain: float = 200.0) -> None:
        super().__init__()
        self.gain = gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits, target = x * self.gain, (x.flip(0) > 0).float()
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        p_t = p * target + (1 - p) * (1 - target)
        return ce * (1 - p_t) ** 2 + x


class HalfCumsum(nn.Module):
    """a float16 running sum on a level of 10, the level taken off after (read back as float32)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.cumsum(x.half() * 4 + 10, -1).float()
        return c - 10 * torch.arange(1, WIDTH + 1, dtype=torch.float32) + x


class PrefixVariance(nn.Module):
    """a running variance over windows of 8 by prefix sums, ``E[s^2] - E[s]^2``, of a signal on a level."""

    def __init__(self, level: float = 30.0) -> None:
        super().__init__()
        self.level = level

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the signal is the sign pattern of x (session 33: it was x itself, whose float32 noise from the 16-layer stem,
        # another on each CPU's GEMM, the cancellation amplifies: on an AVX2 EPYC the repaired file still drifted)
        s = torch.where(x > 0, 0.3, -0.7).repeat(1, 2) + self.level
        c, c2 = torch.cumsum(s, -1), torch.cumsum(s * s, -1)
        mean, mean2 = (c[:, 8:] - c[:, :-8]) / 8, (c2[:, 8:] - c2[:, :-8]) / 8
        return (mean2 - mean * mean)[:, :WIDTH] + x


class SelfCdist(nn.Module):
    """Euclidean self-distances of 36 points (the rows repeated six times), ``torch.cdist(p, p)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = x.repeat(6, 1)
        return torch.cdist(p, p)[:6, :WIDTH] + x


def focal_loss() -> nn.Module: return _deep(FocalLoss)                                        # noqa: E704
def focal_loss_small() -> nn.Module: return _deep(lambda: FocalLoss(gain=1.0))               # noqa: E704
def half_cumsum() -> nn.Module: return _deep(HalfCumsum)                                      # noqa: E704
def prefix_variance() -> nn.Module: return _deep(PrefixVariance)                              # noqa: E704
def prefix_variance_flat() -> nn.Module: return _deep(lambda: PrefixVariance(level=0.0))      # noqa: E704
def self_cdist() -> nn.Module: return _deep(SelfCdist)                                        # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
