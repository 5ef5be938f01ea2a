"""Held-out batch S for issue 30 point 8 (session 35): a blind first-run measurement on arithmetic, distance and loss
forms, screened with torch 2.13 / ONNX Runtime 1.32, both exporters at their default opset, on (6, 32) rows, after
grepping every earlier suite (forms*.py and their screened lists, fx_forms, drifted, real, upstream,
benchmarks/causes_forms.py).  Written before the engine ran on any of them (/tmp/heldS/judge.md of session 35): the
first run's table is in test_forms40s.py.  Screening was time-boxed (about 35 minutes, twenty rounds); attention
masking, cumulative functions and integer conversions were another helper's (heldR) at the same time.

Screened and matching (exact, or within drifttui's tolerance), so not kept:
* arithmetic: ``clamp`` with crossed tensor bounds (both orders), ``hardtanh`` / ``hardshrink`` / ``softshrink`` /
  ``hardswish`` / ``hardsigmoid`` on their boundaries, ``threshold`` (dynamo), ``rrelu`` in eval (TorchScript),
  ``where`` of an int tensor and a float64 0-d buffer, of float16 and a float32 0-d tensor, of int32 and int64, with a
  broadcast NaN branch, ``masked_fill`` broadcast, ``round(decimals=-1 / -2)`` of whole numbers, ``frac`` (dynamo),
  ``nan_to_num`` of ``log``, ``copysign`` / ``fmax`` (neither exports), ``pow`` of a Python base, of a tensor
  exponent, ``pow(x, -3)``, ``lerp`` with weight 1.5 and 0.999999, ``addcdiv`` (dynamo), ``sqrt(x^2 + y^2)``,
  ``mul`` / ``add`` with a float64 buffer, ``rsqrt`` / ``reciprocal`` of int64, ``div(rounding_mode="trunc")`` of
  floats, ``fmod`` by a negative divisor, float16 ``fmod`` / ``reciprocal`` / ``rsqrt`` of 1e-7 / ``clamp``,
  ``LocalResponseNorm`` of sizes 2 .. 5, a hand-written LayerNorm / RMSNorm / erf and tanh GELU (no fusion in either
  file), ``log`` / ``sqrt`` of subnormal values, ``log(softmax)`` of 40x logits (dim -1 and 0), ``log(exp(x))``,
  ``addmm`` / ``addr`` / ``addmv`` with ``beta=0`` and -inf in the input (dynamo), ``tanh`` / ``erf`` / ``exp`` /
  ``log`` / ``sin`` / ``atan`` / ``asinh`` / ``acosh`` / ``atanh`` / ``sqrt`` against torch over 1e-30 .. 90
  (ONNX Runtime's kernels alone, 20 000 values a decade band);
* distance: ``cdist(p=1)`` of (2, 3, 32) batches (dynamo fails), ``cosine_similarity`` over dim 0 and of 1e20
  vectors (dynamo), ``pairwise_distance(p=-2, keepdim=True)``, ``norm`` / ``vector_norm`` / ``matrix_norm`` (``fro``,
  1) of 1e13 .. 1e20 rows, ``vector_norm(ord=-inf)``, float16 ``vector_norm(ord=inf)``, ``normalize`` of 1e20 rows and
  of zero rows, a triplet loss with a cosine distance;
* loss: ``kl_div(log_target=True, reduction="batchmean")``, ``kl_div`` of targets with zeros, ``smooth_l1_loss(beta=0)``
  / ``huber_loss(delta=0.3)`` / ``margin_ranking_loss`` / ``soft_margin_loss`` of 40x logits (dynamo; TorchScript
  refuses them), ``nll_loss(weight=)``, ``gaussian_nll_loss`` of 1e-7 variances (TorchScript; dynamo fails),
  ``mse_loss`` of 1e18 values, ``l1_loss`` against rounded targets (dynamo), a hand-written ``nll_loss(log(softmax))``;
* export with neither exporter or files ONNX Runtime refuses: ``cross_entropy`` with probability targets (with and
  without ``label_smoothing`` / ``weight``), ``mvlgamma``, ``special.zeta``, ``hypot``, bfloat16 ``Mul`` / ``Add`` /
  ``Div`` / ``Where`` / ``Pow`` / ``ReduceMax`` (no CPU kernel);
* drifting, but a form the suites hold (not kept): ``clamp`` of an int by a float bound (TorchScript, forms32's
  ``clamp_int``), ``cdist(p=0 / inf)`` (TorchScript, forms32/34), ``cross_entropy(weight=, label_smoothing=,
  ignore_index=)`` (dynamo: forms30/34/36), ``binary_cross_entropy_with_logits`` of 30x logits with and without
  ``pos_weight`` and ``multilabel_soft_margin_loss`` (``Log(Sigmoid)``, forms33/40j), ``cosine_similarity`` of 1e20
  vectors (TorchScript, forms40g's ``count_cosine``), ``log_softmax`` / ``softmax`` of float16 with
  ``dtype=torch.float32`` (forms40d), ``div(int64, 7, rounding_mode="floor" / "trunc")`` past 2**24 (dynamo, forms39's
  ``time_bucket``), int64 ``pow`` overflow (test_int_pow), float16 ``remainder`` and float16 ``x * 1.0003`` /
  ``x / 3.0001`` / ``add(alpha=1.0003)`` (forms39/40q opmath), float16 ``//`` (onnxscript#989; forms40m's floor of a
  rounded quotient), ``nan_to_num`` of float16 past 65504 (forms40d), ``norm(dtype=torch.float64)`` of 1e20 rows
  (TorchScript: the dtype applied after the op, forms40d), ``baddbmm(beta=0)`` / ``addbmm(beta=0)`` of -inf
  (forms34), ``celu`` / ``tanhshrink`` of 1e-3 scaled up (forms40i, a made-up factor), ``sinh`` / ``cosh`` of 88.7 ..
  89.4 (inf in ONNX Runtime, finite in torch: a window too narrow for real code), an offset hand-written LayerNorm
  (torch's own float32, forms36).

What drifts, and is kept (forms36's ``poisson_eps`` is the one earlier form of its cause, and there the file's
value was -inf, which a non-finite guard valued log(eps) repaired; here the values are finite or torch's value is
not one number): **the dynamo exporter's ONNX optimizer drops a small ``+ eps``**.  onnxscript's no-op rewrite rules
(``rewriter/rules/common/_no_op.py``: ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1``) match a one-element constant with
``math.isclose(c, 0, abs_tol=1e-8)`` (``_pattern_ir.Constant``'s default tolerance), so every addend ``|eps| <= 1e-8``
is removed (1e-8, 1e-9, 1e-10, 1e-12, 1e-20, 1e-43 all dropped in the screen; 2e-8 and 1e-7 kept); the TorchScript
file keeps the ``Add`` and matches torch.  The upstream threads on this class of rewrite: onnx/optimizer#285
(``eliminate_nop_with_unit`` changes outputs), ROCm/AMDMIGraphX#2659 ("Epsilon values can disappear"), and
microsoft/onnxruntime#7798 / #13460 (ONNX Runtime's own NoopElimination, which compares exactly).  Each is written
as the code upstream writes it:
* ``distill_ce`` (loss, deep): a distillation loss, the teacher's soft targets against the student's
  ``torch.log(softmax(student) + 1e-10)``, the student confident (its logits 60x the features, a span near 50:
  probabilities far below 1e-10).  torch caps each log at log(1e-10) = -23; the dynamo file takes log(p) of the bare
  probability (down to -48): finite on both sides.  Control: ``distill_ce_mild`` (unit logits: every probability over 1e-6, the eps below the tolerance).
* ``step_cosine`` (distance, deep): the cosine between each row's update and the next row's, written
  ``(a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1) + 1e-8)`` on updates of a small step (1e-3 of the features:
  norms near 1e-3, the eps a few percent of the product).  Control: ``step_cosine_unit`` (unit steps).
* ``idw_interp`` (distance, shallow): inverse-distance-weighted interpolation (PointNet++'s feature propagation,
  ``dist_recip = 1.0 / (dists + 1e-8)``) of 6 query points from 3 known points that are among them (sampled from
  the queries, as farthest-point sampling does): the squared distance is exactly 0 there, torch's weight 1e8, the
  file's inf and then inf / inf = NaN; torch's interpolated value at those rows is not one number.
* ``log_power`` (arithmetic, deep): a log-power feature ``torch.log((x * gain) ** 2 + 1e-10)`` of channels some of
  which are near silent (a gain of 1e-6: powers near 1e-13, finite, about 7 below torch's) and some muted (a gain of 0:
  -inf in the file, log(1e-10) in torch), so torch's value where the file is not finite is one number but a guard
  of it leaves the finite ones.

The deep forms sit after forms30's 16-call stem and before a head (20 module calls), the shallow one after one
Linear; the form is always the child ``body``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class DistillCE(nn.Module):
    """a distillation loss per row: the teacher's soft targets against ``log(softmax(student) + 1e-10)``, added to the
    features."""

    def __init__(self, temperature: float = 60.0) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        teacher = F.softmax(x.flip(0), dim=-1)
        student = F.softmax(x * self.temperature, dim=-1)
        loss = -(teacher * torch.log(student + 1e-10)).sum(-1, keepdim=True)
        return x + 0.05 * loss


class StepCosine(nn.Module):
    """the cosine between each row's update (a small step along the features) and the next row's, written with a
    ``1e-8`` in the denominator, scaling the row."""

    def __init__(self, step: float = 1e-3) -> None:
        super().__init__()
        self.step = step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = x * self.step
        b = a.roll(1, 0)
        cos = (a * b).sum(-1, keepdim=True) / (a.norm(dim=-1, keepdim=True) * b.norm(dim=-1, keepdim=True) + 1e-8)
        return x * (1.0 + cos)


class IDWInterp(nn.Module):
    """inverse-distance-weighted interpolation of each of the 6 query points (3-D positions from the features) from
    3 known points sampled among them, ``1.0 / (dists + 1e-8)`` normalised, the known points' features mixed."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pos = x[:, :3]
        known, feats = pos[::2], x[::2]
        dists = ((pos.unsqueeze(1) - known.unsqueeze(0)) ** 2).sum(-1)
        dist_recip = 1.0 / (dists + 1e-8)
        weight = dist_recip / dist_recip.sum(-1, keepdim=True)
        return x + weight @ feats


class LogPower(nn.Module):
    """a log-power feature of channels with gains, some near silent (a gain of 1e-6) and some muted (0):
    ``log((x * gain) ** 2 + 1e-10)``, added to the features."""

    def __init__(self) -> None:
        super().__init__()
        gain = torch.ones(WIDTH)
        gain[1::4], gain[3::8] = 1e-6, 0.0
        self.register_buffer("gain", gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.05 * torch.log((x * self.gain) ** 2 + 1e-10)


def distill_ce() -> nn.Module: return _deep(DistillCE)                                          # noqa: E704
def distill_ce_mild() -> nn.Module: return _deep(lambda: DistillCE(temperature=1.0))            # noqa: E704
def step_cosine() -> nn.Module: return _deep(StepCosine)                                        # noqa: E704
def step_cosine_unit() -> nn.Module: return _deep(lambda: StepCosine(step=1.0))                 # noqa: E704
def idw_interp() -> nn.Module: return _shallow(IDWInterp)                                       # noqa: E704
def log_power() -> nn.Module: return _deep(LogPower)                                            # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
