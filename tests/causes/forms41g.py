"""Held-out batch 41G for issue 30 (session 41): a blind first-run measurement from a fresh angle, **mixed precision
written inside forward** (``torch.autocast("cpu", dtype=torch.float16)`` regions, one float16 submodule in a
float32 model, ``finfo(dtype).min`` masks, ``type_as`` round trips, ``dtype=`` accumulation, integer conversions of
float16 values) in the families attention masking, arithmetic, distance, loss, cumulative functions and integer
conversions, screened with torch 2.13 / ONNX Runtime 1.32 (CPU), both exporters at their default opset, ORT at
``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on (6, 32) rows, after grepping every earlier suite (no ``autocast`` in
any of them).  Written before the engine diagnosed any of them (/tmp/heldG/judge.md).  About 35 minutes, some 250
exports (/tmp/heldG/s1..s6.py).

Screened, and what it showed:
* **both exporters honour ``torch.autocast``**: TorchScript's trace records autocast's ``aten::to`` casts; the
  dynamo exporter lowers torch.export's ``wrap_with_autocast`` region (pytorch/pytorch#136545, closed) with the same
  casts.  Linear / matmul / attention / ``conv`` run in float16 (float16 ``Gemm`` / ``MatMul`` with float16
  initializers), the float32-policy ops (``mse_loss``, ``poisson_nll_loss``, ``cross_entropy``, ``kl_div``,
  ``binary_cross_entropy_with_logits``, ``prod``, ``cdist``) read their inputs through a ``Cast`` to float32, a
  nested ``autocast(enabled=False)`` stays float32: no file ignores the region.  ``autocast(dtype=torch.bfloat16)``
  files do not run (ONNX Runtime's CPU has no bfloat16 Gemm: an error).  Errors, not drifts: ``cross_entropy`` with
  soft targets under autocast (both files INVALID_GRAPH), ``torch.stack`` / ``index_put`` of float16 and float32
  (dynamo: a type error at load), ``nll_loss`` / ``sdpa`` / ``cdist`` under autocast (dynamo refuses).
* matching (0 or a float32 ulp): ``sum`` / ``cumsum`` / ``nansum`` / ``prod`` with ``dtype=torch.float32`` of
  float16, ``vector_norm(dtype=)`` (dynamo), ``.half().type_as(x)``, ``.half().round().long()``, ``bucketize`` of
  float32 values on float16 boundaries (and of float16 values), float16 buffers in float32 arithmetic (``+ - * /``,
  ``pow``, ``atan2``, ``fmod``, ``remainder``, ``maximum``, ``where``, ``cat``, ``lerp``, ``addcmul``, ``clamp``,
  ``mse`` / ``l1`` / ``huber`` losses, comparisons, floor and trunc division: promoted as torch promotes),
  ``finfo(float32).min`` / ``-1e9`` fills of float16 scores (NaN on both sides for a fully masked row), integer sums
  of uint8 / int8 / int16.
* drifting by a mechanism the suites hold (not kept): ``softmax(x_half, dtype=torch.float32)`` (forms40d),
  ``vector_norm(half, dtype=)`` with TorchScript (forms40d), int32 ``cumsum`` past 2**31 with TorchScript (forms35).
* everything else that differs differs by **ONNX Runtime's dropped float16 rounding**: its CPU has no float16
  kernel for Gemm / MatMul / Add / Mul / Softmax..., inserts Casts to float32 around them (InsertCastTransformer)
  and removes the float -> float16 -> float pairs that leaves between them, so a float16 value torch rounds (the
  autocast cast of the input, a float16 op's result) is carried unrounded (forms39's ``half_sum``, forms40f's
  ``half_codes``, microsoft/onnxruntime#8787's family; pytorch/pytorch#146312 is the autocast thread).  drifttui's
  float16 budget holds most of it: one float16 rounding more or less, amplified or not (a temperature, ``exp``, a
  fine ``bucketize``, ``prod``), stays within ``max(rtol, 4 eps)`` of each layer's scale, and the engine says
  WITHIN BUDGET.

Kept: the forms where the dropped rounding is **not** one rounding among others but what the torch model computes
with: a small value absorbed into a large float16 one, or a cancellation, or an integer cut after a float16 offset.
The mechanism is the held one (class ``dtype``), the forms are new (autocast regions: no suite has one):
* ``left_pad_attention`` (attention masking, shallow, both exporters): causal attention over a left-padded
  sequence, scores from float16 projections under autocast, an additive bias ``finfo(scores.dtype).min`` added in
  float16 (transformers' eager mask): the padded queries see no key; torch's float16 ``s + min`` rounds every score
  of such a row to ``min`` (a uniform softmax), ONNX Runtime keeps ``s`` (a softmax of the scores), 0.99 off.
* ``sq_dist`` (distance, deep, both): squared distances to centres by the matmul expansion ``|y|^2 + |c|^2 - 2 y
  c^T`` under autocast around a level of 4, a softmin over the centres: torch cancels float16-rounded terms, the
  file float32 ones, 1.6e-2 off.
* ``level_loss`` (loss, deep, both): a squared error of predictions ``lin(x) + 300`` made under autocast (float16
  at 300 holds quarters) against float32 targets: 0.1 off.  The TorchScript file keeps the float16 rounding at
  ``ORT_DISABLE_ALL`` (an explicit Cast pair) and loses it at ``ORT_ENABLE_ALL`` (ONNX Runtime's Cast elimination):
  drifttui checks the outputs at the user's level.
* ``byte_codes`` (integer conversion, shallow, both): uint8 codes ``(y * 16 + 128).clamp(0, 255)
  .to(torch.uint8)`` of a float16 projection under autocast: float16 at 128 holds eighths, torch truncates the
  rounded value, the file the unrounded one, one code off on some elements.

Clean controls (the same code where nothing drifts): ``sq_dist_f32`` (dynamo) and ``level_loss_f32``
(TorchScript): autocast disabled; and two float16 files the budget holds, where the right answer is no error
finding: ``rbf_scores`` (dynamo, shallow: RBF similarities ``exp(-|y - c|^2 / tau)`` of autocast embeddings; after
the first run found over its budget on samples 0..2, 6.2e-3 against 5.5e-3, so left out of the test) and
``intensity`` (dynamo, shallow: ``log(cumsum(exp(2 y)))`` of an autocast projection).  In the screen ``check``
already named a false origin in both: the Linear called inside the autocast region, ``ONNX none (dropped)``, 1-cos
0.9 (the dynamo exporter's autocast region drops the module scopes of the calls inside it).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


class AmpLeftPadAttention(nn.Module):
    """causal self-attention over a left-padded sequence in a float16 block under ``torch.autocast``: the additive
    bias is ``torch.finfo(scores.dtype).min`` where a key is padded or in the future, added to the float16 scores
    (the first query, a padded position, sees no key at all), a float32 softmax."""

    def __init__(self, enabled: bool = True, pad: int = 2, temperature: float = 1.0) -> None:
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(WIDTH, WIDTH) for _ in range(3))
        self.enabled, self.pad, self.temperature = enabled, pad, temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            scores = self.q(x) @ self.k(x).T / self.temperature
            v = self.v(x)
        keep = torch.ones(n, n, dtype=torch.bool).tril()
        keep[:, :self.pad] = False
        bias = torch.zeros(n, n).masked_fill(~keep, torch.finfo(scores.dtype).min).to(scores.dtype)
        return torch.softmax((scores + bias).float(), -1) @ v.float()


class AmpRBF(nn.Module):
    """RBF similarities of float16 embeddings (``torch.autocast``) to float32 centres, ``exp(-|y - c|^2 / tau)``."""

    def __init__(self, enabled: bool = True, tau: float = 0.5) -> None:
        super().__init__()
        self.lin, self.enabled, self.tau = nn.Linear(WIDTH, WIDTH), enabled, tau
        self.centres = nn.Parameter(torch.randn(WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            y = self.lin(x)
        d2 = (y.float()[:, None, :] - self.centres).pow(2).sum(-1)
        return torch.exp(-(d2 - d2.amin(-1, keepdim=True)) / self.tau)


class AmpIntensity(nn.Module):
    """a cumulative intensity ``cumsum(exp(2 y))`` of a float16 projection under ``torch.autocast``, summed in
    float32 (``cumsum(dtype=torch.float32)``)."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.lin, self.enabled = nn.Linear(WIDTH, WIDTH), enabled

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            y = self.lin(x)
        return torch.log(torch.cumsum(torch.exp(2.0 * y.float()), -1, dtype=torch.float32))



class AmpSqDist(nn.Module):
    """squared distances to centres by the matmul expansion ``|y|^2 + |c|^2 - 2 y c^T`` under ``torch.autocast``
    (embeddings and centres around a common level), a softmin over the centres."""

    def __init__(self, enabled: bool = True, level: float = 4.0) -> None:
        super().__init__()
        self.lin, self.enabled, self.level = nn.Linear(WIDTH, WIDTH), enabled, level
        self.centres = nn.Parameter(torch.randn(8, WIDTH) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            y = self.lin(x) + self.level
            c = self.centres + self.level
            d2 = (y * y).sum(-1, keepdim=True) + (c * c).sum(-1) - 2.0 * (y @ c.T)
        return torch.softmax(-d2.float(), -1) @ self.centres


class AmpLevelLoss(nn.Module):
    """a squared error of predictions around a level (300, a temperature in kelvin) computed under ``torch.autocast``:
    the prediction ``lin(x) + 300`` in float16, the loss (autocast's float32 list) against float32 targets."""

    def __init__(self, enabled: bool = True, level: float = 300.0) -> None:
        super().__init__()
        self.lin, self.enabled, self.level = nn.Linear(WIDTH, WIDTH), enabled, level

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = self.level + x.flip(0)
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            pred = self.lin(x) + self.level
            loss = F.mse_loss(pred, target, reduction="none")
        return loss.float()


class AmpByteCodes(nn.Module):
    """uint8 codes of a float16 projection under ``torch.autocast``, offset by 128 before the cast
    (``(y * 16 + 128).clamp(0, 255).to(torch.uint8)``), read back."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.lin, self.enabled = nn.Linear(WIDTH, WIDTH), enabled

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            y = self.lin(x)
            codes = (y * 16.0 + 128.0).clamp(0.0, 255.0).to(torch.uint8)
        return (codes.float() - 128.0) / 16.0


def left_pad_attention() -> nn.Module: return _shallow(AmpLeftPadAttention)                        # noqa: E704
def sq_dist() -> nn.Module: return _deep(AmpSqDist)                                                 # noqa: E704
def sq_dist_f32() -> nn.Module: return _deep(lambda: AmpSqDist(False))                              # noqa: E704
def level_loss() -> nn.Module: return _deep(AmpLevelLoss)                                           # noqa: E704
def level_loss_f32() -> nn.Module: return _deep(lambda: AmpLevelLoss(False))                        # noqa: E704
def byte_codes() -> nn.Module: return _shallow(AmpByteCodes)                                        # noqa: E704
def rbf_scores() -> nn.Module: return _shallow(AmpRBF)                                              # noqa: E704
def intensity() -> nn.Module: return _shallow(AmpIntensity)                                         # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
