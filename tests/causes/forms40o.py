"""Held-out batch O for issue 30 point 8 (session 33): a blind first-run measurement from the angle of lowerings whose
semantics differ from torch at edge values and on rarely exercised arguments (``weight=``, ``reduction=``, bins,
``rounding_mode``, integer and float16 mixes), reported in microsoft/onnxscript (torchlib) and pytorch/pytorch "onnx"
threads, screened with torch 2.13 / ONNX Runtime 1.32, both exporters at their default opset, on (6, 32) rows, after
grepping every earlier suite (forms*.py and their screened lists, fx_forms, drifted, real, upstream,
benchmarks/causes_forms.py).  Written before the engine ran on any of them (/tmp/heldO/judge.md of session 33): the
first run's table is in test_forms40o.py.  Screening was time-boxed (about 20 minutes, ten rounds).

Screened and matching (exact, or within drifttui's tolerance), so not kept:
* integer conversion and type promotion: ``clamp(min=-1)`` of uint8, ``clamp`` of int8 by a 0-d int64 bound,
  ``masked_fill`` of int32 by 2.7 and of uint8 by -1, ``uint8 + 300``, int32 / int8 times a 0-d int64 tensor (int32
  wrap), ``add(int32, x, alpha=0.5)``, ``sub(int, int, alpha=2)``, ``div(int32, 7.0, rounding_mode="floor")``,
  ``fmod`` of int by -7, ``prod`` / ``sum`` of int8, ``pow`` of int32 by 2.5, ``pow(2, int)``, ``bucketize(out_int32=
  True)``, ``bucketize(right=True)`` of NaN, ``cumsum(bool, dtype=int32)``, ``one_hot`` of a negative remainder,
  ``index_fill`` with a negative index; ``clamp(int8, -200, 200)`` and ``masked_fill(int8, 200)`` raise in torch;
* loss arguments: ``mse_loss(weight=)`` (none / mean / sum), ``huber_loss(weight=)`` (dynamo; TorchScript: not
  supported), ``cross_entropy(weight=, ignore_index, reduction="sum" / "none")``, ``nll_loss(weight=, reduction=
  "sum")``, unbatched ``nll_loss(weight=)`` (dynamo), ``kl_div(reduction="sum")``, ``binary_cross_entropy(weight=,
  reduction="sum")``, ``binary_cross_entropy_with_logits(pos_weight=, reduction="none")`` of unit logits,
  ``cosine_embedding_loss(reduction="none")``, ``triplet_margin_loss(p=3)`` (dynamo); unbatched ``cross_entropy``
  gives files ONNX Runtime refuses (a Reshape), an error;
* distance: ``norm(p=3, keepdim=True)``, ``normalize(p=3)``, ``vector_norm(ord=-1 / -inf)``, ``matrix_norm`` (fro,
  1, -inf), ``pairwise_distance(p=3)`` with dynamo;
* statistics and cumulative: ``quantile`` (linear / nearest / lower / higher / midpoint, exact ranks, ties),
  ``nanquantile`` of an all-NaN row, ``nanmean``, ``nansum``, ``count_nonzero``, ``trapezoid``, ``diff(append=)``,
  ``logcumsumexp`` over dim -2 (all dynamo; TorchScript refuses them), ``aminmax``, ``logsumexp`` over two dims,
  ``std(keepdim=True)`` over dim -1; ``nanmedian``, ``cov``, ``corrcoef``, ``histogram``, ``bincount(weights=)``,
  ``cumprod``, ``cummax``, ``sort(stable=True)`` export with neither exporter; ``histc`` with ``min == max`` (torchlib
  refuses it);
* arithmetic: ``addcmul(value=)``, ``rsub(alpha=)``, ``logit(eps=)``, ``acos`` of clamped values, ``celu`` /
  ``elu`` with odd alphas, ``hardtanh(0.2, 0.2)``, ``glu`` over dim 0, ``threshold`` (dynamo), ``pow(10, k)`` and
  ``log10`` of powers of ten, ``trunc`` / ``frac`` / ``fix`` of 1e12 .. 1e20 (dynamo), ``floor`` of ``log2`` / a
  base-3 log; attention masking: ``triu`` of ``-inf`` masks (as the mask and as the input), SDPA ``is_causal`` with
  8 queries against 4 keys;
* drifting, but a form the suites hold or too narrow to keep: ``pairwise_distance(p=3)`` with TorchScript (Pow of a
  negative base, forms32's ``pairwise_l1``), ``softplus(beta=-2, threshold=5)`` with TorchScript (forms20's dropped
  threshold), ``nan_to_num`` of a float16 cast past 65504 with TorchScript (forms40d), float16 ``vector_norm(ord=3)``
  (the dropped float16 rounding, forms40g/h), ``bucketize`` of NaN with TorchScript (NaN ordering, forms_nan's
  family), ``xlogy(0, NaN)`` with dynamo (0 where torch gives NaN), ``div(x, 3, rounding_mode="trunc")`` of 1e20
  with TorchScript (the truncating int64 Cast, real.py's ``floordiv``); ``floor(log10(x))`` (both exporters lower
  ``log10`` as ``Log(x) / ln 10``, one ulp below torch's ``log10``: in a scan of 400 000 values only x = 1e9 changes
  its floor).

Kept (each drifts over drifttui's default tolerance with the exporter named):
* ``weighted_l1`` (loss, deep, dynamo): a confidence-weighted L1 reconstruction error per element,
  ``F.l1_loss(recon, target, reduction="none", weight=w)``.  ``F.l1_loss`` hands its ``__torch_function__`` dispatch
  ``(input, target)`` and the reductions but not ``weight`` (pytorch/pytorch#193003, "Fix l1_loss
  __torch_function__ dispatch for weight", open): under ``torch.export`` the call re-enters without the weight and
  the graph holds ``aten.l1_loss(input, target, 0)``, so the dynamo file computes the unweighted error.  The
  TorchScript trace takes the Python branch (``|d| * w``) and is right: the control ``weighted_l1`` TorchScript.
* ``weighted_l1_mean`` (loss, shallow, dynamo): the same call with ``reduction="mean"`` (``sum(w |d|) / sum(w)``),
  a scalar that gates the features.
* ``edge_histogram`` (integer conversion, deep, dynamo; TorchScript refuses ``histc``): a histogram feature of
  standardised activations clamped to [-1, 1] and quantised to a 0.05 grid, ``torch.histc(q, bins=40, min=-1,
  max=1)``, fed through a Linear and added to every row.  torch's CPU kernel computes each value's bin as ``(x - min)
  * bins / (max - min)`` in float32 and truncates it (pytorch/pytorch#87832 on that order of operations, #68946
  "Strange output of torch.histc"); torchlib's ``aten_histc`` (microsoft/onnxscript#2796, for #2794) compares each
  value with edges computed in double and rounded to float32, ``x < edge``.  A value on an edge (-0.8, -0.6, ... where
  ``x - min`` rounds) lands one bin lower in torch, so counts move between bins.  Control: ``edge_histogram_off``
  (activations off the grid: no value on an edge).  With ``[-2, 2]``, 10 bins and a 0.1 grid only -1.6 and -1.2
  disagree, which the stem's activations rarely reach (not kept); an 8-bit image's intensity histogram
  (``histc(img / 255, bins=255 / 256 / 64 / 51, min=0, max=1)``, probed after the fixes) is exact: with ``min = 0``
  nothing rounds in ``x - min``.
* ``edge_histogram_shallow`` (integer conversion, shallow, dynamo): the same after one Linear.

Held out, written after the fixes (not counted in the first run): ``held_l1_sum`` (deep: ``reduction="sum"``, the
sum gating the features) and ``held_histc_wide`` (deep: a 0.1 grid over 30 bins of [-3, 3]).

The deep forms sit after forms30's 16-call stem and before a head (20 module calls), the shallow ones after one
Linear; the form is always the child ``body``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class WeightedL1(nn.Module):
    """a reconstruction head and a confidence head; the per-element (or mean) weighted L1 error between the
    reconstruction and the features, added back (a weighted reconstruction term as an output)."""

    def __init__(self, reduction: str = "none") -> None:
        super().__init__()
        self.reduction = reduction
        self.recon = nn.Linear(WIDTH, WIDTH)
        self.conf = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.sigmoid(self.conf(x))
        err = F.l1_loss(self.recon(x), x, reduction=self.reduction, weight=w)
        return x + 0.5 * err if self.reduction == "none" else x * (1 + err)


class EdgeHistogram(nn.Module):
    """each row standardised, clamped to [lo, hi] and quantised to a grid of ``1 / grid`` (or left continuous), the
    histogram over ``bins`` bins of [lo, hi] as a global feature, through a Linear, added to every row."""

    def __init__(self, grid: float = 20.0, bins: int = 40, span: float = 1.0, on_grid: bool = True) -> None:
        super().__init__()
        self.grid, self.bins, self.span, self.on_grid = grid, bins, span, on_grid
        self.proj = nn.Linear(bins, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = ((x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True)).clamp(-self.span, self.span)
        q = torch.round(z * self.grid) / self.grid if self.on_grid else z * 0.937 + 0.0113
        hist = torch.histc(q, bins=self.bins, min=-self.span, max=self.span)
        return x + self.proj(hist / q.numel())


def weighted_l1() -> nn.Module: return _deep(WeightedL1)                                         # noqa: E704
def weighted_l1_mean() -> nn.Module: return _shallow(lambda: WeightedL1("mean"))                 # noqa: E704
def edge_histogram() -> nn.Module: return _deep(EdgeHistogram)                                   # noqa: E704
def edge_histogram_shallow() -> nn.Module: return _shallow(EdgeHistogram)                         # noqa: E704
def edge_histogram_off() -> nn.Module: return _deep(lambda: EdgeHistogram(on_grid=False))        # noqa: E704
def held_l1_sum() -> nn.Module: return _deep(lambda: WeightedL1("sum"))                       # noqa: E704
def held_histc_wide() -> nn.Module: return _deep(lambda: EdgeHistogram(10.0, 30, 3.0))        # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
