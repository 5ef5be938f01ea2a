"""Held-out batch 47B for issue 30 (session 47): a blind first-run measurement from a fresh angle, **reinforcement-
learning policy and value networks as deployed for inference**, screened with torch 2.13 / ONNX Runtime 1.32 (CPU),
both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on (6, 32) rows, after
grepping every earlier suite (no tanh-squashed log-prob correction, distributional head, value rescaling, dueling
head or running observation normaliser in any of them).  Written before the engine diagnosed any of them
(/tmp/h47b/judge.md).  About 15 minutes, 62 model variants, some 120 exports (each run at both ORT levels) (/tmp/h47b/s1.py, s2.py).

Screened, and what it showed:
* **the exporters compute what torch computes** (a few float32 ulps of the output's scale) for: SAC's squashed
  Gaussian in its softplus form ``2 (log 2 - u - softplus(-2 u))``, C51 (softmax over 51 atoms times a
  ``linspace`` support, ``argmax``), QR-DQN quantile means, IQN's cosine embedding ``cos(pi i tau)`` (64 cosines,
  taus from a sigmoid or fixed midpoints) in float32, the value rescaling ``h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps
  x`` itself, MuZero's categorical value support (601 atoms) then ``h^-1``, dueling heads ``V + A - mean(A)``,
  action masking by ``masked_fill`` with ``-inf`` / ``finfo.min`` / -1e8 (``log_softmax``, entropy with
  ``clamp(min=finfo.min)``, ``Categorical(logits=...)`` probs and entropy, fully masked rows), a running
  observation normaliser (float32 and float64 buffers, ``clamp(-10, 10)``), Beta heads (``softplus + 1``
  concentrations, mode and mean), PPO's diagonal Gaussian ``log_prob`` / ``entropy``.  Float16 C51 / QR-DQN / IQN /
  dueling / Beta / masked heads at O(1) values were 3e-4 .. 1e-2 off in the screen (not kept, not run through
  drifttui: near its float16 budget; a deep ``.half()`` SAC head 1.2e-2 off was WITHIN BUDGET).
* exporting with neither or one: ``Beta.log_prob`` (``lgamma``: neither exporter); ``torch.distributions`` objects
  built in ``forward`` (``Normal``, ``Categorical``: argument validation breaks ``torch.export``, TorchScript only).
* what drifts past drifttui's tolerance:
  **ONNX Runtime's ``Tanh``** (MLAS's rational approximation, ~10 ulps, saturating to 1.0 from 8.1 where torch's
  does from 9.0) under SAC's ``log(1 - tanh(u)^2 + 1e-6)`` correction of a saturated action: ``1 - tanh^2``
  cancels, and the log of 1e-6 plus a few ulps of 1 magnifies them; the softplus form does not drift;
  **torch's own float32 ``sqrt``** (not correctly rounded on this AVX-512 build: 17% of float32 values 1 ulp off,
  ONNX Runtime's exact) under the inverse value rescaling ``h^-1``: ``(sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2
  eps)`` near 1 then ``** 2 - 1`` cancel twice at small values; and **ONNX Runtime's dropped float16 rounding**
  where a ``.half()`` policy or value head computes the same cancellations in float16.

Kept (each drifts with both exporters at both ORT levels; the origin is always ``body``):
* ``sac_tanh`` (deep): a SAC actor's deterministic action ``tanh(u)`` and its log-prob with the ``log(1 -
  tanh(u)^2 + 1e-6)`` correction, float32, pre-activations scaled by 20 (saturated actions): 5.3e-4 of the scale.
* ``value_inv`` (shallow): the inverse value rescaling ``h^-1`` (eps 1e-3) of small value-head outputs (0.01 x):
  2.2e-3.
* ``sac_half`` (deep): the same SAC actor as a ``.half()`` head (float16 inference), pre-activations scaled by 10:
  1.2e-2.
* ``value_inv_half`` (deep): ``h^-1`` of a ``.half()`` value head at O(1): 1.8 (float16's ``sqrt(1.004) - 1``
  keeps one digit).

Clean controls (the same code where nothing drifts): ``sac_softplus`` (deep, the softplus form of the correction),
``value_h`` (shallow, the forward ``h`` at 100 x), ``dueling`` (shallow, float32 dueling head), ``masked_policy``
(shallow, ``finfo.min`` masking with fully masked rows, ``log_softmax``), ``obs_norm`` (shallow, a float64 running
normaliser with ``clamp``).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


class SquashedGaussian(nn.Module):
    """a SAC actor head: mean and ``log_std`` (clamped to [-20, 2]) in ``dtype``, the deterministic action
    ``tanh(u)`` and its log-prob under the squashed Gaussian, corrected by ``log(1 - tanh(u)^2 + 1e-6)`` (``form
    "log"``) or by the softplus form ``2 (log 2 - u - softplus(-2 u))``."""

    def __init__(self, form: str = "log", scale: float = 1.0, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.mu, self.ls = nn.Linear(WIDTH, 16).to(dtype), nn.Linear(WIDTH, 16).to(dtype)
        self.form, self.scale, self.dtype = form, scale, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(self.dtype)
        u, log_std = self.mu(x) * self.scale, self.ls(x).clamp(-20, 2)
        lp = -0.5 * ((u - u) / log_std.exp()) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
        a = torch.tanh(u)
        if self.form == "log":
            corr = torch.log(1 - a.pow(2) + 1e-6)
        else:
            corr = 2 * (math.log(2) - u - F.softplus(-2 * u))
        lp = (lp - corr).sum(-1, keepdim=True)
        return torch.cat([a, lp.expand(-1, 16)], -1).float()


def h(x: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """the value rescaling of R2D2 / MuZero: ``sign(x) (sqrt(|x| + 1) - 1) + eps x``."""
    return torch.sign(x) * (torch.sqrt(x.abs() + 1) - 1) + eps * x


def h_inv(x: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """its closed-form inverse."""
    return torch.sign(x) * (((torch.sqrt(1 + 4 * eps * (x.abs() + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1)


class ValueRescale(nn.Module):
    """a value head in ``dtype`` whose output (times ``scale``) is mapped through ``h^-1`` (``inverse``) or ``h``."""

    def __init__(self, scale: float = 1.0, inverse: bool = True, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH).to(dtype)
        self.scale, self.inverse, self.dtype = scale, inverse, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.lin(x.to(self.dtype)) * self.scale
        return (h_inv(v) if self.inverse else h(v)).float()


class Dueling(nn.Module):
    """a dueling Q head: ``V + A - mean(A)``."""

    def __init__(self) -> None:
        super().__init__()
        self.v, self.a = nn.Linear(WIDTH, 1), nn.Linear(WIDTH, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.a(x)
        return self.v(x) + a - a.mean(-1, keepdim=True)


class MaskedPolicy(nn.Module):
    """a categorical policy whose illegal actions (``x[:, 16:] <= 0``; the first feature below 1 masks the rest)
    are filled with ``finfo.min`` before ``log_softmax``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = (x[:, 16:] > 0) & (x[:, :1] < 1.0)
        return torch.log_softmax(self.lin(x).masked_fill(~mask, torch.finfo(torch.float32).min), -1)


class ObsNorm(nn.Module):
    """a running observation normaliser with float64 statistics (as Stable-Baselines keeps them), clipped to
    [-10, 10], before the policy's first layer."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.register_buffer("mean", (torch.randn(WIDTH, generator=g) * 50).double())
        self.register_buffer("var", (torch.rand(WIDTH, generator=g) * 1e-6).double())
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        obs = x * 3 + self.mean.float()
        z = ((obs.double() - self.mean) / torch.sqrt(self.var + 1e-8)).float()
        return self.lin(torch.clamp(z, -10.0, 10.0))


def sac_tanh() -> nn.Module: return _deep(lambda: SquashedGaussian(scale=20.0))                     # noqa: E704
def sac_softplus() -> nn.Module: return _deep(lambda: SquashedGaussian("softplus", 20.0))          # noqa: E704
def sac_half() -> nn.Module: return _shallow(lambda: SquashedGaussian(scale=3.0, dtype=HALF))       # noqa: E704
def value_inv() -> nn.Module: return _shallow(lambda: ValueRescale(0.01))                          # noqa: E704
def value_h() -> nn.Module: return _shallow(lambda: ValueRescale(100.0, inverse=False))            # noqa: E704
def value_inv_half() -> nn.Module: return _deep(lambda: ValueRescale(dtype=HALF))                   # noqa: E704
def dueling() -> nn.Module: return _shallow(Dueling)                                               # noqa: E704
def masked_policy() -> nn.Module: return _shallow(MaskedPolicy)                                    # noqa: E704
def obs_norm() -> nn.Module: return _shallow(ObsNorm)                                              # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
