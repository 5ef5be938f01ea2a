"""Held-out batch Q for issue 30 point 8 (session 34): a blind first-run measurement on distance, loss and arithmetic
forms, screened with torch 2.13 / ONNX Runtime 1.32, both exporters at their default opset, on (6, 32) rows, after
grepping every earlier suite (forms*.py and their screened lists, fx_forms, drifted, real, upstream,
benchmarks/causes_forms.py).  Written before the engine ran on any of them (/tmp/heldQ/judge.md of session 34): the
first run's table is in test_forms40q.py.  Screening was time-boxed (about 30 minutes, six rounds); attention
masking, integer conversions and cumulative functions were another helper's (heldP) at the same time.

Screened and matching (exact, or within drifttui's tolerance), so not kept:
* distance: ``cdist`` of (2, 3, 32) batches against a broadcast batch (TorchScript), ``cosine_similarity`` over dim 0
  and against one broadcast row, ``linalg.norm(ord="fro")`` over two dims, ``vector_norm(ord=10 / -0.5)``,
  ``norm(p=-inf)``, ``pairwise_distance`` against one row / with ``keepdim=True`` (p = 2), ``nn.Embedding(max_norm=
  1.0)`` (its renormalisation in place), ``exp(-d2 / 800)`` of float16 squared distances (one float16 rounding,
  within the float16 budget);
* loss: ``cross_entropy`` / ``nll_loss(log_softmax)`` of logits with ``-inf`` masked classes (none / mean),
  ``kl_div(log_target=True)`` of ``-inf`` log-probabilities, segmentation ``cross_entropy(ignore_index=255)`` over
  (N, C, H, W) with and without class weights, ``ignore_index=-1`` targets, ``nll_loss(weight=, ignore_index=-1)``,
  ``kl_div(reduction="batchmean")`` of 3-D inputs, ``hinge_embedding_loss`` / ``cosine_embedding_loss`` /
  ``margin_ranking_loss`` / ``soft_margin_loss`` with targets of 0 (``sign`` of a rounded value; dynamo: TorchScript
  refuses them), ``triplet_margin_loss(eps=1e-6)`` (dynamo), float16 ``cross_entropy`` / ``huber_loss``;
* arithmetic: ``pow`` of negative bases by integer-valued float and int64 exponents, ``(-1.0) ** k``, ``remainder``
  by a negative divisor, float16 ``fmod``, ``angle`` of zeros (dynamo), ``sin`` / ``cos`` of 1e5 .. 1e7, ``rsqrt`` of
  1e-38 values, ``reciprocal`` of 1e-38 values, ``clamp`` with ``min > max`` (scalar and tensor bounds), float16
  ``x + 1e-8`` / ``1e5 - x`` / ``x * 1e-5`` (the scalar's float16 rounding inside the budget or not reached);
* export with neither exporter (not kept): ``pdist``, ``matrix_norm(ord="nuc" / 2)``, ``special.chebyshev_polynomial_t``,
  ``hermite_polynomial_h``, ``bessel_j0``, ``modified_bessel_i0``, ``ndtri``; ``cdist(p=0.5 / 1.5)`` and batched
  ``cdist`` (dynamo); ``cross_entropy`` with probability targets and class weights gives files ONNX Runtime refuses;
* drifting, but a form the suites hold (not kept): ``cdist(p=0.5 / 1.5)`` with TorchScript (Pow of a negative
  difference, forms33's ``cdist_p3``), ``pairwise_distance(p=1)`` with TorchScript (forms32's ``pairwise_l1``),
  ``cross_entropy(label_smoothing=)`` of ``-inf``-masked logits and of (N, C, H, W) logits with ``ignore_index``
  (dynamo; forms30's ``ce_smooth`` / forms33's ``ce_ignore_smooth``), ``binary_cross_entropy_with_logits`` of 1e4x
  logits (``Log(Sigmoid)``, forms33 / forms40j), ``log1p`` of 1e-8 values (``Log(1 + x)``, upstream.py),
  ``log(erfc(x))`` (dynamo, forms33), float16 ``remainder`` (the decomposition rounded at each float16 node:
  forms39's opmath), float16 ``mean`` of squares (TorchScript, forms39), ``pow(1.5, x_half)`` (ONNX Runtime's dropped
  float16 rounding, forms40g/h), float16 ``logit`` / ``rsqrt`` / ``reciprocal`` / ``atan2`` / ``sinc`` / ``xlogy`` /
  norms (within the float16 budget, or the dropped rounding).

Kept: one mechanism, new to the suites (forms40d's docstring noted the float16 scalar's rounding only inside the
budget): **a Python scalar operand of a float16 arithmetic op**.  torch's CPU binary kernels hold a wrapped number
in their opmath type (``iter.original_scalar_value<opmath_t>``: float32 for float16) and round only the result, so
``t_half / 86400.0`` is ``t / 86400.0f`` rounded once; both exporters write the scalar as a float16 constant
(TorchScript: a float16 ``Constant``; dynamo: a float16 initializer ``scalar_tensor_default_N``), and 86400, 80000,
150528 and 65535 are past float16's 65504: the file divides by inf (the quotient 0, ``exp(0) = 1``).  The threads:
onnxconverter-common#153 ("dividing by a small epsilon turns into a division by 0" after a float16 conversion,
constants clamped since), pytorch/executorch#18076 (float16 constants such as -100000 overflow to -inf),
apple/coremltools#2669 (an out-of-range float32 sentinel made float16: NaN).  Each drifts over drifttui's default
tolerance with both exporters.  The forms keep their float16 values exact (whole numbers under 2048), so ONNX
Runtime's dropped float16 roundings (forms40g/h: it computes these float16 ops through float32 and removes the
Cast pairs) stay inside the float32 rule once the scalar is right (checked against the same bodies in float32:
0.3 of the tolerance at most):
* ``day_fraction`` (arithmetic, deep): whole seconds since an event held in float16 as a fraction of a day,
  ``seconds / 86400.0``, added to the features.  Control: ``day_fraction_float`` (the same code in float32).
* ``rbf_affinity`` (distance, deep): whole-pixel float16 2-D positions, an RBF affinity of their squared distances,
  ``exp(-d2 / (2 * sigma**2))`` with sigma = 200 (2 sigma^2 = 80000), each row moved by its affinity-weighted sum.
  Control: ``rbf_affinity_float`` (the same code in float32).
* ``recon_error`` (loss, deep): a per-sample reconstruction error of 8-bit-like float16 intensities, the sum of
  squares normalised by an image's pixel count given as a Python int (``3 * 224 * 224`` = 150528).
* ``depth_norm`` (arithmetic, shallow): a float16 depth map in whole millimetres normalised by the 16-bit range,
  ``depth / 65535.0``.
Screened for the same mechanism and not kept: ``floor(p_half / 0.1)`` / ``/ 0.3`` voxel indices (0.1 and 0.3 are
in range: the float16 rounding of the scalar, 2.4e-4 and 4e-5 relative, is mixed with ONNX Runtime's dropped
rounding of the quotient, which flips the same floors on its own).

Held out, written after the fix (not counted in the first run): ``held_ms_fraction`` (deep: whole milliseconds as a
fraction of an hour, ``ms / 3.6e6``) and ``held_per_100k`` (shallow: small float16 rates per 100 000, ``rate * 1e5``:
a ``Mul``, the product in range, the scalar not).  Probed and not kept: an RBF affinity written ``d2 * (1 / (2 *
300**2))`` (5.6e-6, a float16 subnormal 0.5% off: 0.7 of the tolerance).

The deep forms sit after forms30's 16-call stem and before a head (20 module calls), the shallow one after one
Linear; the form is always the child ``body``.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


def _spread(x: torch.Tensor) -> torch.Tensor:
    """the features standardised over the rows and clamped to [-2, 2] (the stem's rows are close together)."""
    return ((x - x.mean(0)) / x.std(0).clamp_min(1e-6)).clamp(-2.0, 2.0)


class DayFraction(nn.Module):
    """whole seconds since an event (under 2048: exact in float16) as a fraction of ``period`` seconds."""

    def __init__(self, period: float = 86400.0, dtype: torch.dtype = torch.float16) -> None:
        super().__init__()
        self.period, self.dtype = period, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seconds = torch.round((_spread(x) + 2.0) * 500.0).to(self.dtype)
        day = seconds / self.period
        return x + day.float() * 6.0


class RBFAffinity(nn.Module):
    """whole-pixel 2-D positions, an RBF affinity of their squared distances (sigma in pixels; the squares under
    2048, exact in float16), each row moved by its affinity-weighted sum of rows."""

    def __init__(self, sigma: float = 200.0, dtype: torch.dtype = torch.float16) -> None:
        super().__init__()
        self.sigma, self.dtype = sigma, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = torch.round(_spread(x)[:, :2] * 8.0).to(self.dtype)
        d2 = (p[:, None] - p[None]).pow(2).sum(-1)
        k = torch.exp(-d2 / (2 * self.sigma ** 2))
        return x + (k.float() @ x) * 0.25


class ReconError(nn.Module):
    """a per-sample reconstruction error of 8-bit-like intensities, its sum of squares normalised by an image's
    pixel count (a Python int, 3 * 224 * 224), added to the features."""

    def __init__(self, pixels: int = 3 * 224 * 224) -> None:
        super().__init__()
        self.pixels = pixels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = torch.round((_spread(x) + 2.0) * 2.0).half()
        recon = torch.round((_spread(x.flip(-1)) + 2.0) * 2.0).half()
        error = (recon - target).pow(2).sum(-1, keepdim=True) / self.pixels
        return x + error.float() * 10.0


class DepthNorm(nn.Module):
    """a float16 depth map in whole millimetres (under 2048) normalised by the 16-bit range."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        depth = torch.round((_spread(x) + 2.0) * 500.0).half()
        return x + (depth / 65535.0).float() * 5.0


class MsFraction(nn.Module):
    """held out (written after the fix): whole milliseconds held in float16 as a fraction of an hour, / 3.6e6."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ms = torch.round((_spread(x) + 2.0) * 500.0).half()
        return x + (ms / 3.6e6).float() * 100.0


class Per100k(nn.Module):
    """held out (written after the fix): small float16 rates (1e-4 scale) told per 100 000, ``rate * 1e5``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rate = ((_spread(x) + 2.0) * 1e-4).half()
        return x + (rate * 1e5).float() * 0.1


def day_fraction() -> nn.Module: return _deep(DayFraction)                                        # noqa: E704
def day_fraction_float() -> nn.Module: return _deep(lambda: DayFraction(dtype=torch.float32))     # noqa: E704
def rbf_affinity() -> nn.Module: return _deep(RBFAffinity)                                        # noqa: E704
def rbf_affinity_float() -> nn.Module: return _deep(lambda: RBFAffinity(dtype=torch.float32))     # noqa: E704
def recon_error() -> nn.Module: return _deep(ReconError)                                          # noqa: E704
def depth_norm() -> nn.Module: return _shallow(DepthNorm)                                         # noqa: E704
def held_ms_fraction() -> nn.Module: return _deep(MsFraction)                                     # noqa: E704
def held_per_100k() -> nn.Module: return _shallow(Per100k)                                        # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
