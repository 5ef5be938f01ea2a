"""Upstream drift forms found for issue 30 point 8 in session 28 (tests/causes/forms39.py): a float32 running
sum, integer powers, ``Tensor.any`` of floats and a float16 variance; none of
them in forms20/30/32-38, forms_special / forms_nan / forms_dof, upstream.py, real.py, benchmarks/causes_forms.py
or the catalogue.  Each still reproduces with torch 2.13 / ONNX Runtime 1.32 (``test_forms39.py`` says with
which exporter).  The deep ones sit after forms30's 16-call stem and before a head, the shallow ones after one
Linear; the form is always the child ``body``:

* ``running_mean`` / ``suffix_sum``: ``torch.cumsum`` of a long float32 sequence over a level (a running mean of
  65536 steps; a reversed cumulative sum, ``flip(cumsum(flip(x)))``, as discounted returns are summed): torch's
  CPU kernel accumulates float32 in double (pytorch/pytorch#180153: "float32 cumsum CPU exactly matches
  float64"), ONNX Runtime's ``CumSum`` in a running float32 sum (the ``ReduceSum`` sibling is
  microsoft/onnxruntime#28450), ~2e3 off at the end of the row;
* ``hash_pow`` / ``int_pow``: ``torch.pow`` of int64 tensors whose result passes 2**53 (a polynomial feature hash
  ``7 ** q % 1009``; a power of two integer tensors): torch multiplies integers exactly, ONNX Runtime's integer
  ``Pow`` goes through double ``std::pow`` (microsoft/onnxruntime#19298 and openvinotoolkit/openvino#35838 are
  its siblings), the low digits are wrong, and the modulo turns them into a different bucket;
* ``any_float``: ``Tensor.any(-1)`` of float features (0, or a fraction below -0.3): torch asks "is any element
  not 0"; the TorchScript exporter lowers it as ``ReduceSum(Cast(x, int64)) > 0``, which truncates -0.7 to 0
  (and lets -2 and 2 cancel); the dynamo file is right;
* ``half_var``: a float16 block's variance, ``(x.half() + 30).var(-1)`` (a hand-written norm in a half model):
  torch computes a float16 reduction in float32 and rounds once (its "opmath"), the file rounds every
  intermediate (mean, deviation, square, mean) to float16 (microsoft/onnxruntime#15977's family: ONNX
  Runtime's CPU float16 kernels);
* held out, written after the mechanisms and never tuned on: ``token_cumsum`` (a running normaliser over
  4096 positions, dim 1), ``cube_hash`` (``q ** 4 % 997``, a scalar exponent);
* held out, a second batch (probed after the first run of the held-out forms above): ``time_bucket``, nanosecond
  timestamps bucketed by the second, ``torch.div(ts, 10**9, rounding_mode="floor") % 60``: the dynamo exporter's
  lowering divides the int64 timestamps through a float (a Cast), ~1e2 ns off at 1.7e18, the wrong second; the
  TorchScript file is right;
* held out, a third batch (written after the opmath counterfactual of ``half_var``, never tuned on): ``half_sum``,
  a float16 row sum over a level, and ``half_cumsum``, a float16 running sum: ONNX Runtime's CPU drops the float16
  rounding of ``x.half()`` before the op it runs through float32 Casts (microsoft/onnxruntime#8787's family);
* clean controls: ``running_mean_short`` (64 steps), ``hash_pow_small`` (every power under 2**53),
  ``any_mask`` (``any`` of a boolean mask).
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class RunningMean(nn.Module):
    """the running mean of a ``steps``-long sequence tiled from |x| over a level, its last 32 steps, centred."""

    def __init__(self, steps: int, level: float = 50.0) -> None:
        super().__init__()
        self.steps, self.level = steps, level

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = x.abs().repeat(1, self.steps // WIDTH) + self.level
        count = torch.arange(1, self.steps + 1, dtype=x.dtype)
        mean = torch.cumsum(seq, -1) / count
        return x + (mean[:, -WIDTH:] - self.level)


class SuffixSum(nn.Module):
    """reversed cumulative sums (returns to go) of a 65536-long reward sequence over a level, the first 32."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rewards = x.abs().repeat(1, 2048) + 100.0
        to_go = torch.flip(torch.cumsum(torch.flip(rewards, [-1]), -1), [-1])
        return x + (to_go[:, :WIDTH] - 100.0 * 65536) * 1e-3


class HashPow(nn.Module):
    """a polynomial feature hash: ``base ** q % 1009`` of quantised features ``q`` (``top`` the largest)."""

    def __init__(self, top: int) -> None:
        super().__init__()
        self.top = top

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = (x.abs() * 20 + self.top - 4).clamp(max=self.top).long()
        bucket = torch.pow(7, q) % 1009
        return x + bucket.float() / 1009.0


class IntPow(nn.Module):
    """an int64 power of two integer tensors: ``a ** b`` with ``a`` in [900, 1400], ``b`` in {5, 6}, mod 1000."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = (x.abs() * 100 + 900).clamp(max=1400).long()
        b = (x.flip(-1) > 0).long() + 5
        return x * ((a ** b) % 1000).float() / 1000.0


class AnyNonzero(nn.Module):
    """a flag per group of 8 features: any feature that is not 0 (``float``: the features themselves, 0 or a
    fraction below -0.3; else the boolean mask of them)."""

    def __init__(self, floats: bool) -> None:
        super().__init__()
        self.floats = floats

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        v = x.view(n, 4, 8)
        feat = torch.where(v > -0.3, torch.zeros_like(v), v) if self.floats else v < -0.3
        flag = feat.any(-1).float()
        return x * (1.0 + flag.repeat(1, 8))


class HalfVar(nn.Module):
    """the variance of a float16 block over a level, as a gain (x 10)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.half() + 30.0
        v = h.var(-1, keepdim=True).float()
        return x * v * 10.0


def running_mean() -> nn.Module: return _deep(lambda: RunningMean(65536))              # noqa: E704
def running_mean_short() -> nn.Module: return _deep(lambda: RunningMean(64))           # noqa: E704
def suffix_sum() -> nn.Module: return _shallow(SuffixSum)                              # noqa: E704
def hash_pow() -> nn.Module: return _deep(lambda: HashPow(22))                         # noqa: E704
def hash_pow_small() -> nn.Module: return _deep(lambda: HashPow(18))                   # noqa: E704
def int_pow() -> nn.Module: return _shallow(IntPow)                                    # noqa: E704
def any_float() -> nn.Module: return _deep(lambda: AnyNonzero(True))                  # noqa: E704
def any_mask() -> nn.Module: return _deep(lambda: AnyNonzero(False))                   # noqa: E704
def half_var() -> nn.Module: return _deep(HalfVar)                                     # noqa: E704


# --- held out: written after the mechanisms (CumSum in accumulate64, int_pow_exact), never tuned on

class TokenCumsum(nn.Module):
    """linear attention's running normaliser: ``cumsum`` over 4096 positions (dim 1 of (N, L, C)) of positive
    keys over a level, its last position, centred."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keys = (x.abs() + 20.0).unsqueeze(1).repeat(1, 4096, 1)
        z = torch.cumsum(keys, 1)[:, -1]
        return x + (z / 4096.0 - 20.0) * 2.0


class CubeHash(nn.Module):
    """a hash of large integer features: ``q ** 4 % 997`` with q in [30000, 50000] (a scalar exponent).  q is a
    feature's position and sign (session 33: it was ``(|x| * 20000 + 30000).long()``, where the stem's float32 noise,
    ~1e-7 relative and another on each CPU's GEMM, flips a few q by one: on an AVX2 EPYC the repaired file still
    drifted, with no module owning it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        position = torch.arange(x.shape[-1], device=x.device)
        q = 30000 + 613 * position + 7919 * (x > 0).long()
        return x + (torch.pow(q, 4) % 997).float() / 997.0


class TimeBucket(nn.Module):
    """held out (second batch): nanosecond timestamps bucketed by the second, ``torch.div(ts, 10**9,
    rounding_mode="floor")``, the second of the minute as a feature."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ts = (x * 1e12).long() + 1_700_000_000_000_000_000
        second = torch.div(ts, 1_000_000_000, rounding_mode="floor") % 60
        return x + second.float() / 60.0


class HalfSum(nn.Module):
    """held out (third batch, written after the opmath counterfactual): a float16 block's row sum over a level,
    centred, as a shift."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = (x.half() * 4.0 + 20.0).sum(-1, keepdim=True)
        return x + (s.float() - 640.0) * 0.1


class HalfCumsum(nn.Module):
    """held out (third batch): a float16 running sum along the row over a level, centred."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.cumsum(x.half() + 8.0, -1)
        steps = torch.arange(1, WIDTH + 1, dtype=x.dtype) * 8.0
        return x + (c.float() - steps) * 0.1


def half_sum() -> nn.Module: return _deep(HalfSum)                                     # noqa: E704
def half_cumsum() -> nn.Module: return _deep(HalfCumsum)                               # noqa: E704
def time_bucket() -> nn.Module: return _deep(TimeBucket)                               # noqa: E704
def token_cumsum() -> nn.Module: return _deep(TokenCumsum)                             # noqa: E704
def cube_hash() -> nn.Module: return _shallow(CubeHash)                                # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
