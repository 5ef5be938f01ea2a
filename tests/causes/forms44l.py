"""Held-out batch 44L for issue 30 (session 44): a blind first-run measurement from a fresh angle, **state-space and
recurrent sequence models written in plain torch, as people export them**.  DOCSTRING TO BE COMPLETED.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH, STATE = 32, 8
HALF = torch.float16


def pscan(A: torch.Tensor, X: torch.Tensor) -> None:
    """alxndrTL/mamba.py's in-place Blelloch scan (``PScan.pscan``): ``X[t] = A[t] X[t-1] + X[t]`` over dim 2 of
    (B, D, L, N) tensors, L a power of 2, written in place through views of views."""
    b, d, length, _ = A.size()
    steps = int(math.log2(length))
    Aa, Xa = A, X
    for _ in range(steps - 2):                                     # up sweep
        t = Xa.size(2)
        Aa, Xa = Aa.view(b, d, t // 2, 2, -1), Xa.view(b, d, t // 2, 2, -1)
        Xa[:, :, :, 1].add_(Aa[:, :, :, 1].mul(Xa[:, :, :, 0]))
        Aa[:, :, :, 1].mul_(Aa[:, :, :, 0])
        Aa, Xa = Aa[:, :, :, 1], Xa[:, :, :, 1]
    if Xa.size(2) == 4:
        Xa[:, :, 1].add_(Aa[:, :, 1].mul(Xa[:, :, 0]))
        Aa[:, :, 1].mul_(Aa[:, :, 0])
        Xa[:, :, 3].add_(Aa[:, :, 3].mul(Xa[:, :, 2] + Aa[:, :, 2].mul(Xa[:, :, 1])))
    elif Xa.size(2) == 2:
        Xa[:, :, 1].add_(Aa[:, :, 1].mul(Xa[:, :, 0]))
        return
    else:
        return
    s = 2 ** (steps - 2)                                           # down sweep
    Aa, Xa = A[:, :, s - 1:length:s], X[:, :, s - 1:length:s]
    Xa[:, :, 2].add_(Aa[:, :, 2].mul(Xa[:, :, 1]))
    Aa[:, :, 2].mul_(Aa[:, :, 1])
    for k in range(steps - 3, -1, -1):
        Aa, Xa = A[:, :, 2 ** k - 1:length:2 ** k], X[:, :, 2 ** k - 1:length:2 ** k]
        t = Xa.size(2)
        Aa, Xa = Aa.view(b, d, t // 2, 2, -1), Xa.view(b, d, t // 2, 2, -1)
        Xa[:, :, 1:, 0].add_(Aa[:, :, 1:, 0].mul(Xa[:, :, :-1, 1]))
        Aa[:, :, 1:, 0].mul_(Aa[:, :, :-1, 1])


class SelectiveSSM(nn.Module):
    """Mamba's selective SSM (S6) as mamba-minimal / mamba.py write it: ``dt = softplus(dt_proj(...))`` with Mamba's
    ``dt_bias`` init (the inverse softplus of dt in [1e-3, 1e-1]), ``A = -exp(A_log)`` (S4D-real, 1..N),
    ``dA = exp(dt A)``, ``dBu = dt B u``; the states by ``pscan`` (``parallel=True``) or a sequential loop."""

    def __init__(self, parallel: bool = True, d: int = WIDTH, n: int = STATE, rank: int = 4) -> None:
        super().__init__()
        self.parallel, self.n, self.rank = parallel, n, rank
        self.x_proj = nn.Linear(d, rank + 2 * n, bias=False)
        self.dt_proj = nn.Linear(rank, d)
        dt = torch.exp(torch.rand(d) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, n + 1).float()).repeat(d, 1))
        self.D = nn.Parameter(torch.ones(d))

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        dt, B, C = self.x_proj(u).split([self.rank, self.n, self.n], -1)
        dt = F.softplus(self.dt_proj(dt))
        dA = torch.exp(dt.unsqueeze(-1) * -torch.exp(self.A_log))             # (b, l, d, n)
        dBu = dt.unsqueeze(-1) * B.unsqueeze(2) * u.unsqueeze(-1)
        if self.parallel:
            A, X = dA.clone().transpose(2, 1), dBu.clone().transpose(2, 1)     # (b, d, l, n)
            pscan(A, X)
            hs = X.transpose(2, 1)
        else:
            h, states = torch.zeros_like(dBu[:, 0]), []
            for t in range(u.shape[1]):
                h = dA[:, t] * h + dBu[:, t]
                states.append(h)
            hs = torch.stack(states, 1)
        return (hs @ C.unsqueeze(-1)).squeeze(-1) + u * self.D


class MambaBlock(nn.Module):
    """mamba.py's MambaBlock: in_proj, a causal depthwise conv1d (left padding, ``[..., :L]``), SiLU, the selective
    SSM by ``pscan``, the SiLU gate and out_proj."""

    def __init__(self, parallel: bool = True, d: int = WIDTH, conv: int = 4) -> None:
        super().__init__()
        self.in_proj = nn.Linear(d, 2 * d, bias=False)
        self.conv1d = nn.Conv1d(d, d, conv, groups=d, padding=conv - 1)
        self.ssm = SelectiveSSM(parallel, d)
        self.out_proj = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[1]
        u, z = self.in_proj(x).chunk(2, -1)
        u = F.silu(self.conv1d(u.transpose(1, 2))[..., :length].transpose(1, 2))
        return self.out_proj(self.ssm(u) * F.silu(z))


def logcumsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """an export-friendly ``logcumsumexp`` (the TorchScript exporter refuses ``aten::logcumsumexp``): shifted by the
    dimension's max."""
    m = x.amax(dim, keepdim=True)
    return torch.log(torch.cumsum(torch.exp(x - m), dim)) + m


class MinGRU(nn.Module):
    """minGRU ("Were RNNs all we needed?", lucidrains' minGRU-pytorch) in log space: the states by Heinsen's parallel
    scan, ``a* = cumsum(log z')``, ``log h = a* + logcumsumexp(log values - a*)``; ``own=True`` the export-friendly
    ``logcumsumexp`` above, else ``torch.logcumsumexp``; ``dtype`` the module's own (``.half()``)."""

    def __init__(self, own: bool = False, dtype: torch.dtype = torch.float32, d: int = WIDTH) -> None:
        super().__init__()
        self.to_hidden_and_gate = nn.Linear(d, 2 * d, bias=False).to(dtype)
        self.own, self.dtype = own, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, gate = self.to_hidden_and_gate(x.to(self.dtype)).chunk(2, -1)
        log_coeffs = -F.softplus(gate)
        log_z = -F.softplus(-gate)
        log_tilde_h = torch.where(hidden >= 0, (F.relu(hidden) + 0.5).log(), -F.softplus(-hidden))
        a_star = log_coeffs.cumsum(1)
        values = log_z + log_tilde_h - a_star
        scanned = logcumsumexp(values, 1) if self.own else torch.logcumsumexp(values, 1)
        return (a_star + scanned).exp().float()


def pscan_ssm() -> nn.Module: return _shallow(SelectiveSSM)                                    # noqa: E704
def scan_loop() -> nn.Module: return _shallow(lambda: MambaBlock(False))                        # noqa: E704
def pscan_block() -> nn.Module: return _shallow(MambaBlock)                                    # noqa: E704
def mingru_long() -> nn.Module: return _deep(MinGRU)                                           # noqa: E704
def mingru_short() -> nn.Module: return _deep(MinGRU)                                          # noqa: E704
def mingru_half() -> nn.Module: return _shallow(lambda: MinGRU(dtype=HALF))                   # noqa: E704
def lcse_half() -> nn.Module: return _deep(lambda: MinGRU(True, HALF))                        # noqa: E704
def lcse_float() -> nn.Module: return _deep(lambda: MinGRU(True))                             # noqa: E704


def seq16_inputs() -> torch.Tensor:
    return torch.randn(2, 16, WIDTH)


def seq64_inputs() -> torch.Tensor:
    return torch.randn(2, 64, WIDTH)


def seq256_inputs() -> torch.Tensor:
    return torch.randn(2, 256, WIDTH)


def seq12_inputs() -> torch.Tensor:
    return torch.randn(2, 12, WIDTH)

