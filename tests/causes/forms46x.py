"""Held-out batch 46X for issue 30 (session 46): a blind first-run measurement from a fresh angle, **scientific and
physics-informed ML** (Fourier neural operators, finite-difference PDE residuals, Hamiltonian / energy heads,
molecular models: pair distances, radial bases, cutoffs, envelopes, angles), screened with torch 2.13 / ONNX Runtime
1.32 (CPU), both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on (6, 32)
rows, after grepping every earlier suite (no FNO spectral weights, FD stencils of a PDE residual, polynomial
envelope, Gaussian / Bessel radial basis or triplet angle in any of them).  Written before the engine diagnosed any
of them (/tmp/h46X/judge.md).  About 20 minutes, 52 models, some 200 exports and ORT runs (/tmp/h46X/s1.py .. s4.py).

Screened, and what it showed:
* **in float32 the exporters compute what torch computes for all of it** (a few float32 ulps of the output's scale,
  both exporters, both ORT levels): FD Laplacians and Burgers residuals by ``roll``, by circular / replicate /
  reflect ``F.pad`` + ``conv1d`` and a 2-d 5-point ``conv2d`` stencil (h down to 1/512), a Hamiltonian ``0.5 |p|^2
  + V(q)`` with ``vector_norm`` / ``linalg.norm`` and ``exp``, DimeNet's Bessel basis with the p = 6 polynomial
  envelope, SchNet's Gaussian smearing with a cosine cutoff and shifted softplus (``beta`` 1 and 5), spherical
  coordinates by ``acos`` / ``atan2``, clamped triplet angles; and (dynamo) FNO layers: ``rfft`` / ``irfft`` with
  ``view_as_real`` / ``view_as_complex``, complex weights written out as real/imaginary products, ``F.pad`` of the
  kept modes, the Nyquist bin kept, an odd ``irfft`` length, ``rfft2`` / ``irfft2`` (``norm="ortho"``), a complex
  ``X * W`` product, n = 1024 points.
* exporting with neither or one (not kept): the TorchScript exporter has no lowering for ``fft_rfft`` / ``rfft2``
  (every FNO form is dynamo-only); dynamo refuses an FNO written with index assignment into a complex zeros tensor,
  ``rfft(n=)`` with a truncating / padding length and an ``irfft`` longer than the spectrum, and ``torch.cdist``.
* near the tolerance, not kept: a 1000-point (non-power-of-two) ``rfft`` -> ``irfft`` (dynamo's DFT in ONNX Runtime:
  3.6e-5 of the scale inside a deep model, 1.3e-4 alone); float16 energy heads' norms / means / ``F.normalize``
  and autocast SchNet / Laplacian forms at O(1) values (5e-4 .. 1e-3: within the float16 budget); a float16
  ``(p ** 2).sum(-1).sqrt()`` past 65504 (torch's own float16 sum overflows to inf, the file's does not); ``atan2``
  of a zero bond vector (TorchScript NaN, forms33's mechanism).
* what drifts past drifttui's tolerance does so by mechanisms the catalogue holds, in forms no suite has: **ONNX
  Runtime's dropped float16 rounding** (microsoft/onnxruntime#8787) where a physical field or coordinates sit at a
  large offset (a temperature of 300, a 100 A box) and a stencil or a pair difference cancels it; and **torch's own
  float32 rounding at acos's domain edge**: the cosine of a bond with itself rounds to 1 + ulp (NaN) or 1 - ulp on
  either side, otherwise in each.

Kept (each drifts with both exporters at both ORT levels; the origin is always ``body``):
* ``pair_rbf_box`` (deep): SchNet pair distances under ``torch.autocast`` with positions in a 100 A box, a Gaussian
  basis: torch rounds the positions (ulp 1/16) before differencing; 2.1e-2 of the scale.  ``pair_rbf`` (the same at
  20 A, 2.7e-3) is within drifttui's float16 budget: a control (the judge had it as a drift; the budget rule is
  documented and the engine applied it).
* ``burgers_half`` (deep): a float16 Burgers residual of a field around 300 by ``roll`` stencils: 0.41 off.
* ``triplet_angle`` (shallow): DimeNet-like triplet angles including k == j, ``acos`` of an unclamped product of
  ``F.normalize``d bonds, ``nan_to_num``: 0.39 off.
* ``heat_stencil`` (shallow): an autocast heat-equation Laplacian (circular ``F.pad`` + ``conv1d``, h = 1/16) of a
  field around 300: 8e-2 off.

Clean controls (the same code where nothing drifts): ``pair_rbf`` (within budget), ``pair_rbf_f32``,
``burgers_f32``, ``triplet_angle_distinct`` (k != j: never a bond with itself), ``heat_stencil_f32``,
``bessel_envelope`` (DimeNet's radial basis in float32), ``spectral_pow2`` (a dynamo FNO layer on 1024 points).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


def _pos(x: torch.Tensor) -> torch.Tensor:
    """8 atoms' xyz out of a (n, 32) row."""
    return x.view(x.shape[0], 8, 4)[..., :3]


class AmpPairRBF(nn.Module):
    """SchNet-like pair features under ``torch.autocast``: positions decoded at Angstrom coordinates (~20), pair
    distances ``(ri - rj).norm(-1)``, a Gaussian radial basis ``exp(-2 (d - mu)^2)`` summed over neighbours."""

    def __init__(self, enabled: bool = True, offset: float = 20.0) -> None:
        super().__init__()
        self.lin, self.enabled, self.offset = nn.Linear(WIDTH, WIDTH), enabled, offset
        self.register_buffer("mu", torch.linspace(0.0, 5.0, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            r = _pos(self.lin(x)) + self.offset
            d = (r[:, :, None] - r[:, None]).norm(dim=-1)
            rbf = torch.exp(-2.0 * (d[..., None] - self.mu) ** 2)
        return rbf.float().sum(2).reshape(x.shape[0], WIDTH)


class HalfBurgers(nn.Module):
    """A Burgers residual ``u u_x - nu u_xx`` of a float16 field (an ``nn.Linear(...).half()`` around a base
    temperature of 300) on a periodic grid, h = 1/16, the stencils by ``roll``."""

    def __init__(self, dtype: torch.dtype = HALF, h: float = 1 / 16) -> None:
        super().__init__()
        self.lin, self.dtype, self.h = nn.Linear(WIDTH, WIDTH).to(dtype), dtype, h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = (self.lin(x.to(self.dtype)) + 300.0).view(-1, 2, 16)
        lap = (u.roll(1, -1) + u.roll(-1, -1) - 2 * u) / self.h ** 2
        ux = (u.roll(-1, -1) - u.roll(1, -1)) / (2 * self.h)
        return (u * ux * 1e-3 - 0.01 * lap).float().flatten(1)


class TripletAngle(nn.Module):
    """DimeNet-like triplet angles k-i-j about atom 0, every pair (k == j included), ``acos`` of the product of
    ``F.normalize``d bond vectors, unclamped, NaN written as -1 by ``nan_to_num`` (``distinct``: k != j)."""

    def __init__(self, distinct: bool = False) -> None:
        super().__init__()
        self.distinct = distinct

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = _pos(x)
        a = F.normalize(r[:, :, None] - r[:, :1, None], dim=-1)
        b = F.normalize(r[:, None] - r[:, :1, None], dim=-1)
        if self.distinct:       # k != j: the second bond of each triplet is the next atom's
            b = a.roll(1, 1)
        c = (a * b).sum(-1).expand(-1, -1, 8)
        return torch.nan_to_num(torch.acos(c), nan=-1.0).reshape(x.shape[0], 64)[:, :WIDTH]


class AmpHeatStencil(nn.Module):
    """A heat-equation Laplacian under ``torch.autocast``: a temperature field around 300, circular padding and a
    ``conv1d`` with the stencil ``[1, -2, 1] / h^2`` (h = 1/16)."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.lin, self.enabled = nn.Linear(WIDTH, WIDTH), enabled
        self.register_buffer("k", torch.tensor([[[1.0, -2.0, 1.0]]]) * 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            u = (self.lin(x) + 300.0).view(-1, 1, 16)
            lap = F.conv1d(F.pad(u, (1, 1), mode="circular"), self.k)
        return lap.float().view(-1, WIDTH)


class SpectralLong(nn.Module):
    """An FNO-1d layer on a long grid: ``rfft`` of n points, every mode scaled by a real spectral weight through
    ``view_as_real`` / ``view_as_complex``, ``irfft`` back; the first 32 points."""

    def __init__(self, n: int = 1000) -> None:
        super().__init__()
        self.lin, self.n = nn.Linear(WIDTH, n), n
        self.w = nn.Parameter(torch.randn(n // 2 + 1) / 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        X = torch.view_as_real(torch.fft.rfft(self.lin(x)))
        Y = torch.view_as_complex((X * self.w[:, None]).contiguous())
        return torch.fft.irfft(Y, n=self.n)[:, :WIDTH]


class BesselEnvelope(nn.Module):
    """DimeNet's radial basis: pair distances over a cutoff of 5, the polynomial envelope p = 6 and
    ``sin(n pi d) `` Bessel functions (a control: float32)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("freq", torch.arange(1, 5).float() * torch.pi)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = _pos(x)
        d = (r[:, :, None] - r[:, None]).norm(dim=-1) / 5.0 + 1e-3
        p = 6
        env = 1 / d - (p + 1) * (p + 2) / 2 * d ** (p - 1) + p * (p + 2) * d ** p - p * (p + 1) / 2 * d ** (p + 1)
        env = torch.where(d < 1, env, torch.zeros_like(d))
        return (env[..., None] * torch.sin(self.freq * d[..., None])).sum(2).reshape(x.shape[0], WIDTH)


def pair_rbf() -> nn.Module: return _deep(AmpPairRBF)                                             # noqa: E704
def pair_rbf_box() -> nn.Module: return _deep(lambda: AmpPairRBF(True, 100.0))                   # noqa: E704
def pair_rbf_f32() -> nn.Module: return _deep(lambda: AmpPairRBF(False))                          # noqa: E704
def burgers_half() -> nn.Module: return _deep(HalfBurgers)                                        # noqa: E704
def burgers_f32() -> nn.Module: return _deep(lambda: HalfBurgers(torch.float32))                  # noqa: E704
def triplet_angle() -> nn.Module: return _shallow(TripletAngle)                                   # noqa: E704
def triplet_angle_distinct() -> nn.Module: return _shallow(lambda: TripletAngle(True))            # noqa: E704
def heat_stencil() -> nn.Module: return _shallow(AmpHeatStencil)                                  # noqa: E704
def heat_stencil_f32() -> nn.Module: return _shallow(lambda: AmpHeatStencil(False))               # noqa: E704
def spectral_long() -> nn.Module: return _deep(SpectralLong)                                      # noqa: E704
def spectral_pow2() -> nn.Module: return _deep(lambda: SpectralLong(1024))                        # noqa: E704
def bessel_envelope() -> nn.Module: return _shallow(BesselEnvelope)                               # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
