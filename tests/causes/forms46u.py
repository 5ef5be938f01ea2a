"""Held-out batch 46U for issue 30 (session 46): a blind first-run measurement from a fresh angle, **neural
rendering and 3D geometry code in plain torch** (NeRF positional and random Fourier encodings, mip-NeRF's integrated
encoding, volume rendering, ray/box and ray/sphere intersection, quaternion <-> rotation matrix, axis-angle by
``acos`` / ``atan2``, Rodrigues, pinhole projection, SDFs with smooth minimum, degree-3 spherical harmonics, 3D
Gaussian splatting covariance / conic math), in float32, a ``.half()`` module and ``torch.autocast``; screened with
torch 2.13 / ONNX Runtime 1.32 (CPU), both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and
``ORT_ENABLE_ALL``, on (6, 32) rows, seeds 7-9 (/tmp/h46U/s1..s3.py, ~50 models, ~200 exports).  Written before the
engine diagnosed any of them (/tmp/h46U/judge.md).

Screened, and what it showed:
* **the exporters compute what torch computes for the geometry itself** (float32 ulps, both exporters, both ORT
  levels): ray/AABB slabs (``1 / d``, ``minimum`` / ``maximum``, ``amax`` / ``amin``, a hit mask), ray/sphere
  (``sqrt`` of a clamped discriminant), quaternion -> matrix -> quaternion (pytorch3d's ``_sqrt_positive_part`` with
  boolean-mask assignment and ``one_hot(argmax) > 0.5`` selection, and a ``gather`` form), axis-angle by
  ``acos(clamp((tr - 1) / 2))`` and by ``atan2(|skew|, tr - 1)``, Rodrigues, pinhole projection with a clamped depth
  divide, box / sphere SDFs with a polynomial and a ``logsumexp`` smooth minimum, 3DGS's ``eval_sh`` of degree 3,
  volume rendering with ``T = exp(-cumsum(sigma delta))`` and with ``exp(cumsum(log(1 - alpha + 1e-10)))``, NeRF's
  encoding at its default 10 frequencies, mip-NeRF's IPE in float32; under autocast the geometry ops that autocast
  leaves in float32 (no matmul) are untouched.
* exporting with neither (not kept): ``torch.cumprod`` (NeRF's exclusive transmittance): TorchScript has no
  symbolic, dynamo no lowering.
* what drifts past drifttui's tolerance: **high-frequency encodings**, where ``sin`` / ``cos`` of ``2^k pi x``
  multiply whatever rounding their argument carries by up to ``2^15 pi``: in float32 at 16 frequencies (the
  argument's few-ulp differences in ``tanh`` / the Linear feeding it become 1e-3 of the output), and wherever the
  argument is float16 (a ``.half()`` module or autocast: float16 holds 1/8 at 200, 1 at 1600, so one rounding of
  the argument moves the sine by up to its whole range); and float16 matmuls under autocast feeding the geometry
  (Rodrigues' ``K @ K``, a projection ``p @ K.T`` at pixel scale, 3DGS's ``J Sigma J^T``, a volume renderer's
  density head): 1e-4 to 5e-4 of the output, within the float16 budget.

Kept (each drifts with both exporters at both ORT levels; the origin is ``body``):
* ``posenc_hi`` (deep): NeRF positional encoding of ``tanh`` coordinates at 16 frequencies, float32: 1.7e-3.
* ``posenc_amp`` (shallow): the same at 10 frequencies under ``torch.autocast`` (float16 Linear, float16 argument):
  0.18.
* ``fourier_amp`` (deep): random Fourier features ``sin(2 pi tanh(x) @ B)``, ``B ~ N(0, 10^2)``, under autocast:
  3.5e-2 (``2 * math.pi`` written as the float16 constant 6.28125, and ONNX Runtime's dropped float16 rounding).

Clean controls (the same code where nothing drifts): ``posenc10`` (deep, float32 at NeRF's 10 frequencies:
1.3e-5 of the output), ``fourier_f32`` (deep, float32), ``vollog_f32`` (shallow, float32 volume rendering),
``quat_roundtrip`` (deep, quaternion -> matrix -> quaternion), ``ray_box_amp`` (shallow, slabs under autocast),
``gauss_cov_f32`` (deep, dynamo: TorchScript cannot export ``diag_embed``); and two the screen's float32 threshold took
for drifts that drifttui's documented float16 budget (4 eps of the scale) holds, so no error finding is right:
``vollog_amp`` (shallow, the volume renderer's density / colour head under autocast: 4.9e-4 of the output) and
``gauss_cov_half`` (deep, dynamo, a ``.half()`` 3DGS covariance / conic head: 6.7e-3 of the output after the head).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


def _amp(enabled: bool):
    return torch.autocast("cpu", dtype=HALF, enabled=enabled)


class PosEnc(nn.Module):
    """NeRF positional encoding of 3 ``tanh`` coordinates: ``sin`` / ``cos`` of ``2^k pi p`` for k < L, projected
    back to 32 features; the Linear and the encoding under autocast when ``amp``."""

    def __init__(self, L: int = 10, amp: bool = False) -> None:
        super().__init__()
        self.amp = amp
        self.lin, self.out = nn.Linear(WIDTH, 3), nn.Linear(3 + 6 * L, WIDTH)
        self.register_buffer("freqs", (2.0 ** torch.arange(L)) * math.pi)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with _amp(self.amp):
            p = torch.tanh(self.lin(x))
            xb = p[..., None, :] * self.freqs.to(p.dtype)[:, None]
            enc = torch.cat([p, torch.sin(xb).flatten(-2), torch.cos(xb).flatten(-2)], -1)
        return self.out(enc.float())


class Fourier(nn.Module):
    """random Fourier features ``[sin, cos](2 pi tanh(x) @ B)``, ``B ~ N(0, scale^2)`` (a buffer)."""

    def __init__(self, scale: float = 10.0, amp: bool = True) -> None:
        super().__init__()
        self.amp = amp
        self.register_buffer("B", torch.randn(WIDTH, WIDTH // 2) * scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with _amp(self.amp):
            h = 2 * math.pi * (torch.tanh(x) @ self.B)
            return torch.cat([h.sin(), h.cos()], -1).float()


class VolLog(nn.Module):
    """8 samples per ray: density and colour from a Linear, ``alpha = 1 - exp(-relu(sigma) delta)``, exclusive
    transmittance ``exp(cumsum(log(1 - alpha + 1e-10)))``, the rendered colour, weights and transmittance."""

    def __init__(self, amp: bool = True) -> None:
        super().__init__()
        self.amp, self.lin = amp, nn.Linear(WIDTH, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with _amp(self.amp):
            h = self.lin(x).view(n, 8, 4)
            sigma = F.relu(h[..., 0]) * 4.0
            rgb = torch.sigmoid(h[..., 1:])
            alpha = 1.0 - torch.exp(-sigma * 0.5)
            logt = torch.cumsum(torch.log(1.0 - alpha + 1e-10), -1)
            T = torch.exp(torch.cat([torch.zeros_like(logt[:, :1]), logt[:, :-1]], -1))
            w = alpha * T
            out = torch.cat([(w[..., None] * rgb).sum(1), w, T], -1)
        return F.pad(out.float(), (0, WIDTH - out.shape[-1]))


def _quat_to_mat(q: torch.Tensor) -> torch.Tensor:
    q = F.normalize(q, dim=-1)
    r, i, j, k = q.unbind(-1)
    s = 2.0 / (q * q).sum(-1)
    o = torch.stack((1 - s * (j * j + k * k), s * (i * j - k * r), s * (i * k + j * r),
                     s * (i * j + k * r), 1 - s * (i * i + k * k), s * (j * k - i * r),
                     s * (i * k - j * r), s * (j * k + i * r), 1 - s * (i * i + j * j)), -1)
    return o.reshape(q.shape[:-1] + (3, 3))


class QuatRoundTrip(nn.Module):
    """8 quaternions -> rotation matrices -> quaternions (the best-conditioned candidate by ``argmax``, gathered)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        m = _quat_to_mat(x.view(n, 8, 4))
        m00, m01, m02, m10, m11, m12, m20, m21, m22 = m.reshape(n, 8, 9).unbind(-1)
        q_abs = torch.sqrt(torch.stack([1.0 + m00 + m11 + m22, 1.0 + m00 - m11 - m22, 1.0 - m00 + m11 - m22,
                                        1.0 - m00 - m11 + m22], -1).clamp(min=0))
        cands = torch.stack([torch.stack([q_abs[..., 0] ** 2, m21 - m12, m02 - m20, m10 - m01], -1),
                             torch.stack([m21 - m12, q_abs[..., 1] ** 2, m10 + m01, m02 + m20], -1),
                             torch.stack([m02 - m20, m10 + m01, q_abs[..., 2] ** 2, m12 + m21], -1),
                             torch.stack([m10 - m01, m20 + m02, m21 + m12, q_abs[..., 3] ** 2], -1)], -2)
        cands = cands / (2.0 * q_abs[..., None].clamp(min=0.1))
        idx = q_abs.argmax(-1)
        q = torch.gather(cands, -2, idx[..., None, None].expand(n, 8, 1, 4)).squeeze(-2)
        return (q * torch.sign(q[..., :1] + 1e-12)).flatten(1)


class RayBox(nn.Module):
    """slab ray / AABB ([-1, 1]^3) intersection of 4 rays: near, far and hit, under autocast when ``amp``."""

    def __init__(self, amp: bool = True) -> None:
        super().__init__()
        self.amp = amp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with _amp(self.amp):
            v = x.view(n, 8, 4)[..., :3]
            o, d = v[:, :4] * 2.0, F.normalize(v[:, 4:], dim=-1)
            inv = 1.0 / d
            t0, t1 = (-1.0 - o) * inv, (1.0 - o) * inv
            tmin, tmax = torch.minimum(t0, t1).amax(-1), torch.maximum(t0, t1).amin(-1)
            hit = tmax > tmin.clamp(min=0)
            near = torch.where(hit, tmin.clamp(min=0), torch.zeros_like(tmin))
            far = torch.where(hit, tmax, torch.zeros_like(tmax))
            out = torch.cat([near, far, hit.float()], -1)
        return F.pad(out.float(), (0, WIDTH - 12))


class GaussCov(nn.Module):
    """3D Gaussian splatting in ``dtype`` (a ``.half()`` head): 4 Gaussians' quaternion, log-scale, mean and opacity
    from a Linear; ``Sigma = R S S^T R^T``, the EWA 2D covariance ``J Sigma J^T + 0.3 I`` (focal 500, depth ~4), its
    determinant, conic, 3-sigma radius (``ceil``), and the opacity-weighted Gaussian at an offset."""

    def __init__(self, dtype: torch.dtype = HALF, focal: float = 500.0) -> None:
        super().__init__()
        self.dtype, self.f = dtype, focal
        self.lin = nn.Linear(WIDTH, 4 * 11).to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        h = self.lin(x.to(self.dtype)).view(n, 4, 11)
        q, ls, mean, op = h[..., :4], h[..., 4:7], h[..., 7:10], h[..., 10]
        M = _quat_to_mat(q) @ torch.diag_embed(torch.exp(ls * 0.5 - 3.0))
        cov = M @ M.transpose(-1, -2)
        tx, ty, tz = (mean * 0.5 + torch.tensor([0, 0, 4.0]).to(h.dtype)).unbind(-1)
        z = torch.zeros_like(tz)
        J = torch.stack([self.f / tz, z, -self.f * tx / (tz * tz), z, self.f / tz, -self.f * ty / (tz * tz)],
                        -1).view(n, 4, 2, 3)
        c2 = J @ cov @ J.transpose(-1, -2)
        a, b, c = c2[..., 0, 0] + 0.3, c2[..., 0, 1], c2[..., 1, 1] + 0.3
        det = a * c - b * b
        conic = torch.stack([c / det, -b / det, a / det], -1)
        mid = 0.5 * (a + c)
        radius = torch.ceil(3.0 * torch.sqrt(mid + torch.sqrt((mid * mid - det).clamp(min=0.1))))
        d = x.view(n, 4, 8)[..., :2].to(h.dtype)
        power = -0.5 * (conic[..., 0] * d[..., 0] ** 2 + conic[..., 2] * d[..., 1] ** 2) - conic[..., 1] * d[..., 0] * d[..., 1]
        alpha = (torch.sigmoid(op) * torch.exp(power)).clamp(max=0.99)
        out = torch.cat([conic.flatten(1), det, radius, alpha], -1)
        return F.pad(out.float(), (0, WIDTH - out.shape[-1]))


def posenc_hi() -> nn.Module: return _deep(lambda: PosEnc(16))                                     # noqa: E704
def posenc10() -> nn.Module: return _deep(lambda: PosEnc(10))                                      # noqa: E704
def posenc_amp() -> nn.Module: return _shallow(lambda: PosEnc(10, amp=True))                       # noqa: E704
def fourier_amp() -> nn.Module: return _deep(Fourier)                                              # noqa: E704
def fourier_f32() -> nn.Module: return _deep(lambda: Fourier(amp=False))                           # noqa: E704
def vollog_amp() -> nn.Module: return _shallow(VolLog)                                             # noqa: E704
def vollog_f32() -> nn.Module: return _shallow(lambda: VolLog(False))                              # noqa: E704
def quat_roundtrip() -> nn.Module: return _deep(QuatRoundTrip)                                     # noqa: E704
def ray_box_amp() -> nn.Module: return _shallow(RayBox)                                            # noqa: E704


def gauss_cov_half() -> nn.Module: return _deep(GaussCov)                                         # noqa: E704
def gauss_cov_f32() -> nn.Module: return _deep(lambda: GaussCov(torch.float32))                    # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
