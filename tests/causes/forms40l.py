"""Held-out batch L for issue 30 point 8 (session 32): a blind first-run measurement in the **loss, cumulative and
distance** families, screened with torch 2.13 / ONNX Runtime 1.32, both exporters at their default opset, on (6, 32)
rows, after grepping every earlier suite (forms*.py including forms40c..j's screened lists, fx_forms, drifted, real,
upstream, test_upstream_drifts).  Written before the engine ran on any of them (/tmp/heldL/judge.md of session 32):
the first run's table is in test_forms40l.py.  Screening was time-boxed (about 35 minutes, five rounds).

Screened and matching (or within drifttui's tolerance), so not kept:
* loss: ``cross_entropy`` over a 32768-class row, with ``ignore_index=-1`` (mean), InfoNCE (``cross_entropy`` of
  normalised features over a temperature of 0.07; also float16), ``nll_loss`` with ``ignore_index=-1`` and over
  (N, C, d) with class weights, ``gaussian_nll_loss`` with zero (clamped) variances and ``full=True``
  (TorchScript; dynamo fails to export), ``huber_loss`` on its breakpoint and with ``delta=1e-4``,
  ``smooth_l1_loss(beta=1e-4)``, ``margin_ranking_loss``, ``hinge_embedding_loss``, ``cosine_embedding_loss``,
  ``multi_margin_loss(p=1)`` (dynamo; TorchScript: not supported), ``triplet_margin_with_distance_loss`` with the
  default distance, a softplus triplet loss, distillation ``kl_div`` of ``log_softmax(s / T)`` against an
  underflowing ``softmax(t / T)`` (none and batchmean), float16 ``kl_div`` (6e-4 relative, within the float16
  budget), ``mse_loss`` of 1e19 values, ``softplus`` of 100x, ``logsumexp`` of a row holding ``+inf``;
* cumulative: ``logcumsumexp`` of 3x features (dynamo; TorchScript refuses it), ``diff(prepend=)`` (dynamo;
  TorchScript refuses it), a Mamba2-style ``segsum`` (``exp`` of masked ``cumsum`` differences), a difference of
  ``cumsum`` s 1 step apart on a level of 100, diffusers' min-SNR loss weights ``min(snr, 5) / snr`` gathered from
  ``alphas_cumprod``, a VP-SDE ``sqrt(1 - exp(2 log_mean_coeff))`` (4e-5 relative), the DDIM step below in float32;
  ``cumprod`` (the stick-breaking / ``alphas_cumprod`` in the forward), ``cummax`` and ``cummin`` still export with
  neither exporter (pytorch/pytorch#102948);
* distance: ``cosine_similarity`` broadcast (N, 1, D) against (1, M, D), k-NN by ``topk`` of DGCNN's negated
  ``-2 x x^T + |x|^2 + |x|^2`` and by ``topk(largest=False)`` of ``cdist`` on 36 points at 0 and at a level of 50
  (exact: no near-tie flipped), ``pairwise_distance(eps=0)``, ``cdist`` of 24 x 24 rows on a level (the control
  below), a log-domain Sinkhorn distance (20 iterations; TorchScript exact, dynamo fails to export);
* drifting, but a form the suites hold (not kept): ``cdist(p=inf)`` / ``cdist(p=0)`` (TorchScript; forms32/34),
  ``pairwise_distance(p=inf)`` (TorchScript; forms40g's ``chebyshev``), ``cross_entropy(label_smoothing=)`` with
  ``ignore_index`` or class weights (dynamo drops the smoothing: forms30's ``ce_smooth``; TorchScript refuses it),
  ``binary_cross_entropy_with_logits`` of 100x logits and of soft targets with weights (TorchScript:
  ``Log(Sigmoid)``, forms33 / forms40j's ``focal_loss``).

Kept (each drifts over drifttui's default tolerance with the exporters named; all in deep models, 20 module calls):
* ``ddim_x0_half`` (cumulative / diffusers scheduler, both exporters): a DDIM step's ``pred_original_sample =
  (x_t - sqrt(1 - a_t) eps) / sqrt(a_t)`` in float16, ``a_t`` gathered from ``alphas_cumprod`` (the cumulative product
  of ``1 - betas``, computed at build time as diffusers does) by a timestep drawn from the features and cast to the
  sample's float16.  torch rounds each float16 op; ONNX Runtime's CPU runs them through float32 Casts it inserts and
  drops the rounding between them (microsoft/onnxruntime#8787), and the division by ``sqrt(a_t)`` of late timesteps
  amplifies it: 8.9e-3 relative.  Control: ``ddim_x0_float`` (the same step in float32).
* ``angular_near`` (distance, both exporters): the angle between near-duplicate embeddings,
  ``acos(cosine_similarity(x, x + 1e-3 roll(x)))``.  The cosine is a few float32 ulps below 1, where ``acos`` is
  ill-conditioned (its derivative is infinite at 1): torch's own float32 result is 0.012 off its float64 value, and
  each side rounds the cosine to another ulp (ArcFace-style code clamps the cosine before ``acos`` for this).
  Control: ``angular_far`` (an angle of O(1)).
* ``cdist_25`` (distance, TorchScript; dynamo fails to export ``cdist`` here): 25 query points on a level of 100
  against 25 prototypes on the level.  torch's CPU ``cdist`` takes the matrix-product route only when a side has more
  than 25 rows (``r1 > 25 || r2 > 25``, pytorch/pytorch#42479, #57690 on its cancellation); the TorchScript symbolic
  (``symbolic_opset9.cdist``) when both have 25 or more: at exactly 25 the file cancels where torch does not (7e-3
  relative).  The reverse of forms40f's ``cdist_mm`` (there torch cancels, at 32 prototypes).  Control: ``cdist_24``.
* ``batch_prototypes`` (distance, TorchScript exported with a dynamic batch): ``cdist`` of the batch's points on a
  level of 100 against 10 prototypes.  With the batch dynamic the symbolic cannot read the row count and always
  takes the matrix-product route (pytorch/pytorch#144212 is about the same exported ``cdist`` graph); torch, with 6
  and 10 rows, computes the direct difference: 1.1e-2 relative.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep

WIDTH = 32
STEPS = 1000


def _alphas_cumprod() -> torch.Tensor:
    """DDPM's linear schedule, ``alphas_cumprod = cumprod(1 - betas)`` (computed at build time, as diffusers does)."""
    return torch.cumprod(1 - torch.linspace(1e-4, 0.02, STEPS, dtype=torch.float64), 0).float()


class DdimX0(nn.Module):
    """a DDIM step's ``pred_original_sample = (x_t - sqrt(1 - a_t) eps) / sqrt(a_t)`` in ``dtype``, the timestep of
    each element drawn from the features, ``a_t`` gathered from the schedule (diffusers' ``DDIMScheduler.step``)."""

    def __init__(self, dtype: torch.dtype = torch.float16) -> None:
        super().__init__()
        self.dtype = dtype
        self.register_buffer("alphas_cumprod", _alphas_cumprod())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = (x.abs() * 2000).long().clamp(max=STEPS - 1)
        a = self.alphas_cumprod[t]
        eps = x.flip(0)
        sample = a.sqrt() * x + (1 - a).sqrt() * eps
        a, sample, eps = a.to(self.dtype), sample.to(self.dtype), eps.to(self.dtype)
        return ((sample - (1 - a).sqrt() * eps) / a.sqrt()).float() + x


class AngularDistance(nn.Module):
    """the angle between each feature row and a slightly perturbed copy, ``acos(cosine_similarity(a, b))``, scaling
    the row (an angular distance between near-duplicate embeddings)."""

    def __init__(self, shift: float = 1e-3) -> None:
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x + self.shift * x.roll(1, -1)
        return torch.acos(F.cosine_similarity(x, b, dim=-1)).unsqueeze(-1) * x * 100 + x


class PrototypeDistance(nn.Module):
    """Euclidean distances of ``rows`` query points (the features on a level) to as many prototypes on the same
    level, ``torch.cdist(q, prototypes)`` (a prototype / nearest-centroid head), the first 6 rows kept."""

    def __init__(self, rows: int = 25, protos: int = 25, level: float = 100.0) -> None:
        super().__init__()
        self.rows, self.level = rows, level
        self.prototypes = nn.Parameter(torch.randn(protos, WIDTH) * 0.3 + level)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x.repeat(5, 1)[: self.rows] + self.level
        d = torch.cdist(q, self.prototypes)[: x.shape[0]]
        return d.repeat(1, 2)[:, :WIDTH] * 0.1 + x


class BatchPrototypes(nn.Module):
    """the batch's query points (features on a level) against 10 prototypes, ``torch.cdist(x + level, prototypes)``,
    exported with a dynamic batch."""

    def __init__(self, level: float = 100.0) -> None:
        super().__init__()
        self.level = level
        self.prototypes = nn.Parameter(torch.randn(10, WIDTH) * 0.3 + level)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = torch.cdist(x + self.level, self.prototypes)
        return d.repeat(1, 4)[:, :WIDTH] * 0.1 + x


def ddim_x0_half() -> nn.Module: return _deep(DdimX0)                                            # noqa: E704
def ddim_x0_float() -> nn.Module: return _deep(lambda: DdimX0(torch.float32))                    # noqa: E704
def angular_near() -> nn.Module: return _deep(AngularDistance)                                   # noqa: E704
def angular_far() -> nn.Module: return _deep(lambda: AngularDistance(shift=1.0))                 # noqa: E704

def cdist_25() -> nn.Module: return _deep(PrototypeDistance)                                     # noqa: E704
def cdist_24() -> nn.Module: return _deep(lambda: PrototypeDistance(rows=24, protos=24))          # noqa: E704
def batch_prototypes() -> nn.Module: return _deep(BatchPrototypes)                              # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


def rows64_inputs() -> torch.Tensor:
    """64 rows: past the 25 where torch's CPU ``cdist`` takes the matrix-product route (its own float32 cancels)."""
    return torch.randn(64, WIDTH)
