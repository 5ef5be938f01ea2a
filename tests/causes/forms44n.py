"""Held-out batch 44N for issue 30 (session 44): a blind first-run measurement from a fresh angle, **text-to-speech
and vocoder code written in plain torch as people export it** (VITS / Piper / Matcha / FastSpeech2 / HiFi-GAN /
BigVGAN / RVC / WaveRNN style, seeded small weights, no hub), screened with torch 2.13 / ONNX Runtime 1.32 (CPU),
both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on (6, 32) rows, four
seeded inputs, after grepping every earlier suite (forms40n screened a float32 VITS ``generate_path``; no suite has
mu-law, RVC's coarse pitch, Snake, a rational-quadratic spline or a coupling flow).  Written before the engine
diagnosed any of them (/tmp/h44N/judge.md).  About 25 exports pairs (/tmp/h44N/m1.py, m2.py).

Screened, and what it showed:
* **the exporters compute what torch computes for the TTS code itself in float32** (a few float32 ulps of the
  output's scale, both exporters, both ORT levels): a VITS duration path (a conv duration predictor,
  ``ceil(exp(logw) * x_mask * length_scale)``, ``cumsum``, ``sequence_mask``, ``generate_path``'s padded difference,
  the frames expanded by a ``matmul``) in float32, under autocast, with a ``.half()`` predictor and with ``exp`` and
  ``ceil`` in float16 (no duration lands on a float16 rounding boundary across an integer); FastSpeech2's pitch
  embedding by ``bucketize`` into ``exp(linspace)`` bins (float32, autocast, ``.half()``); BigVGAN's Snake after a
  ``ConvTranspose1d`` (float32); HiFi-GAN's weight-normed ``ConvTranspose1d`` upsampling with a multi-receptive-field
  block; mu-law encoding with ``log1p`` and ``.long()`` (float32); RVC's coarse pitch (``1127 log(1 + f0 / 700)``,
  normalised, ``round``, embedding) in float32; VITS's unconstrained rational-quadratic spline (softmax widths,
  ``cumsum`` knots, bucketing by ``sum(x >= knots) - 1``, gathers); a VITS mean-only coupling flow with ``torch.flip``.
* float16 code a deployer writes: ONNX Runtime's CPU EP has no float16 kernels for the elementwise ops, inserts
  Casts to float32 around them and drops the Cast pairs between consecutive ones (onnxruntime#11831, #16778), so a
  float16 chain runs in float32 with none of torch's per-op float16 roundings.  Alone that stays within or near the
  float16 budget (Snake under autocast 4.2e-4 of the scale, a ``.half()`` coupling flow 5.7e-4, a float16 NSF f0
  2.3e-4, mu-law decoding in float16 5.9e-5: not kept); **followed by a quantiser it flips whole bins**: kept.

Kept (each drifts with both exporters at both ORT levels; the origin is always ``body``):
* ``mulaw_half`` (deep): a float16 waveform (``tanh(...).half()``) mu-law encoded to 256 levels
  (``sign * log1p(mu |a|) / log1p(mu)``, ``((y + 1) / 2 * mu + 0.5).long()``) and embedded: 0.77-0.85 off.
* ``coarse_half`` (deep): RVC's coarse pitch of an f0 from a ``.half()`` predictor: 1.05 off.
* ``mulaw_amp`` (shallow): the waveform head and the mu-law encoding under ``torch.autocast``: 0.59 off.
* ``coarse_amp`` (shallow): the f0 predictor under autocast, the coarse pitch of its float16 output: 0.48 off.

Clean controls (the same code where nothing drifts): ``coarse_f32`` (deep), ``mulaw_amp_off`` (shallow, autocast
disabled), ``spline`` (deep, the rational-quadratic spline), ``coupling`` (deep, float32 coupling + flip), ``hifi``
(deep, HiFi-GAN upsampling + MRF).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


def _mu_law(a: torch.Tensor, mu: int) -> torch.Tensor:
    """WaveRNN / LPCNet mu-law encoding of a waveform in [-1, 1] to ``mu + 1`` integer levels."""
    y = torch.sign(a) * torch.log1p(mu * a.abs()) / math.log1p(mu)
    return ((y + 1) / 2 * mu + 0.5).long()


class MuLaw(nn.Module):
    """a waveform ``tanh(0.3 x)`` (cast to float16 when ``half``) mu-law encoded and embedded."""

    def __init__(self, half: bool = True, mu: int = 255) -> None:
        super().__init__()
        self.half_, self.mu = half, mu
        self.emb = nn.Embedding(mu + 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.tanh(x * 0.3)
        return x + self.emb(_mu_law(a.half() if self.half_ else a, self.mu)).squeeze(-1)


class MuLawAmp(nn.Module):
    """a waveform head and its mu-law encoding under ``torch.autocast``."""

    def __init__(self, enabled: bool = True, mu: int = 255) -> None:
        super().__init__()
        self.lin, self.enabled, self.mu = nn.Linear(WIDTH, WIDTH), enabled, mu
        self.emb = nn.Embedding(mu + 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            q = _mu_law(torch.tanh(self.lin(x)), self.mu)
        return x + self.emb(q).squeeze(-1)


class Coarse(nn.Module):
    """RVC's coarse pitch: an f0 in [50, 1050] Hz from a predictor (``mode`` f32, amp: under autocast, half: a
    ``.half()`` Linear), ``1127 log(1 + f0 / 700)`` normalised to 1..255, ``round``, an embedding."""

    def __init__(self, mode: str = "f32") -> None:
        super().__init__()
        self.mode = mode
        self.pred = nn.Linear(WIDTH, WIDTH)
        if mode == "half":
            self.pred = self.pred.half()
        self.emb = nn.Embedding(256, WIDTH)
        self.mel_min, self.mel_max = 1127 * math.log(1 + 50 / 700), 1127 * math.log(1 + 1100 / 700)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.mode == "amp"):
            p = self.pred(x.half() if self.mode == "half" else x)
        f0 = 50 + torch.sigmoid(p) * 1000
        mel = 1127 * torch.log(1 + f0 / 700)
        mel = ((mel - self.mel_min) * 254 / (self.mel_max - self.mel_min) + 1).clamp(1, 255)
        return x + self.emb(torch.round(mel).long()).mean(1)


def _knots(u: torch.Tensor, tail: float, min_bin: float) -> tuple[torch.Tensor, torch.Tensor]:
    """VITS's spline knots: softmax bin sizes with a floor, ``cumsum``, scaled to [-tail, tail]; (knots, sizes)."""
    nb = u.shape[-1]
    s = min_bin + (1 - min_bin * nb) * F.softmax(u, -1)
    c = 2 * tail * F.pad(torch.cumsum(s, -1), (1, 0), value=0.0) - tail
    c[..., 0], c[..., -1] = -tail, tail
    return c, c[..., 1:] - c[..., :-1]


def rq_spline(x: torch.Tensor, uw: torch.Tensor, uh: torch.Tensor, ud: torch.Tensor, tail: float = 5.0) -> torch.Tensor:
    """VITS ``unconstrained_rational_quadratic_spline`` (linear tails), forward direction."""
    inside = (x >= -tail) & (x <= tail)
    const = math.log(math.exp(1 - 1e-3) - 1)
    d = 1e-3 + F.softplus(F.pad(ud, (1, 1), value=const))
    cw, w = _knots(uw, tail, 1e-3)
    ch, h = _knots(uh, tail, 1e-3)
    loc = cw.clone()
    loc[..., -1] += 1e-6
    xc = x.clamp(-tail, tail)
    idx = (torch.sum(xc[..., None] >= loc, -1) - 1)[..., None]

    def pick(t: torch.Tensor) -> torch.Tensor:
        return t.gather(-1, idx)[..., 0]

    th = (xc - pick(cw)) / pick(w)
    t1 = th * (1 - th)
    delta, d0, d1 = pick(h / w), pick(d), pick(d[..., 1:])
    out = pick(ch) + pick(h) * (delta * th.pow(2) + d0 * t1) / (delta + (d0 + d1 - 2 * delta) * t1)
    return torch.where(inside, out, x)


class Spline(nn.Module):
    """half the channels conditioned on the other half through a rational-quadratic spline of 10 bins."""

    def __init__(self, bins: int = 10) -> None:
        super().__init__()
        self.bins, self.proj = bins, nn.Linear(16, 16 * (3 * bins - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, b = x.shape[0], self.bins
        x0, x1 = x[:, :16], x[:, 16:]
        p = self.proj(x0).view(n, 16, 3 * b - 1)
        return torch.cat([x0, rq_spline(x1, p[..., :b] / 4, p[..., b:2 * b] / 4, p[..., 2 * b:])], 1)


class Coupling(nn.Module):
    """two VITS mean-only ``ResidualCouplingLayer`` steps (reverse) with a gated conv encoder, each then ``Flip``."""

    def __init__(self) -> None:
        super().__init__()
        self.pre, self.enc, self.post = nn.Conv1d(2, 8, 1), nn.Conv1d(8, 16, 5, padding=2), nn.Conv1d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.view(x.shape[0], 4, 8)
        mask = torch.ones_like(h[:, :1])
        for _ in range(2):
            x0, x1 = h[:, :2], h[:, 2:]
            g = self.enc(self.pre(x0) * mask)
            g = torch.tanh(g[:, :8]) * torch.sigmoid(g[:, 8:])
            h = torch.flip(torch.cat([x0, (x1 - self.post(g) * mask) * mask], 1), [1])
        return h.flatten(1)


class HifiBlock(nn.Module):
    """HiFi-GAN: a weight-normed ``ConvTranspose1d`` x4 upsampling, a multi-receptive-field residual block
    (dilations 1, 3, 5, leaky ReLU 0.1), ``tanh``, pooled back to 32 features."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.utils.parametrizations.weight_norm(nn.ConvTranspose1d(8, 4, 8, 4, padding=2))
        self.c1 = nn.ModuleList([nn.Conv1d(4, 4, 3, dilation=d, padding=d) for d in (1, 3, 5)])
        self.c2 = nn.ModuleList([nn.Conv1d(4, 4, 3, padding=1) for _ in range(3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        h = self.up(F.leaky_relu(x.view(n, 8, 4), 0.1))
        for a, b in zip(self.c1, self.c2):
            h = h + b(F.leaky_relu(a(F.leaky_relu(h, 0.1)), 0.1))
        return torch.tanh(h).flatten(1).view(n, WIDTH, 2).mean(-1)


def mulaw_half() -> nn.Module: return _deep(MuLaw)                                                  # noqa: E704
def mulaw_amp() -> nn.Module: return _shallow(MuLawAmp)                                             # noqa: E704
def mulaw_amp_off() -> nn.Module: return _shallow(lambda: MuLawAmp(False))                          # noqa: E704
def coarse_half() -> nn.Module: return _deep(lambda: Coarse("half"))                                # noqa: E704
def coarse_amp() -> nn.Module: return _shallow(lambda: Coarse("amp"))                               # noqa: E704
def coarse_f32() -> nn.Module: return _deep(Coarse)                                                 # noqa: E704
def spline() -> nn.Module: return _deep(Spline)                                                     # noqa: E704
def coupling() -> nn.Module: return _deep(Coupling)                                                 # noqa: E704
def hifi() -> nn.Module: return _deep(HifiBlock)                                                    # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
