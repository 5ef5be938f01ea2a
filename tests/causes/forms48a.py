"""Held-out batch 48A for issue 30 (session 48): a blind first-run measurement from a fresh angle, **efficient
attention variants written in plain torch** (linear attention, random-feature kernels, cosFormer, ALiBi, T5
buckets, sliding-window / block-sparse masks, soft-capped and sigmoid attention, chunked attention with a running
max / sum), screened with torch 2.13 / ONNX Runtime 1.32 (CPU), both exporters at their default opset, ORT at
``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on (6, 32) rows (the rows are the sequence, 2 or 4 heads), after
grepping every earlier suite.  Written before the engine diagnosed any of them (/tmp/h48a/judge.md).  About 20
minutes, some 60 models, 110 exports (/tmp/h48a/s1..s4.py).

Screened, and what it showed:
* **float32 attention code exports exactly** (a few float32 ulps, both exporters, both ORT levels): ELU+1 linear
  attention (non-causal and causal by ``cumsum`` of ``einsum`` outer products, inputs scaled up to 20x), a
  Performer FAVOR+ kernel without stabiliser (TorchScript; with the ``amax`` stabiliser the dynamo exporter fails to
  convert), cosFormer's ``cos`` / ``sin`` reweighting, in-model ALiBi (causal and symmetric, ``finfo.min`` masking),
  ``baddbmm`` ALiBi (BLOOM's form), T5 relative-position buckets of strided and of data-derived positions, sliding
  window masks (``-inf`` and ``finfo.min``), block-sparse masks (``-1e9``), rows masked whole then ``nan_to_num``,
  sigmoid attention with its ``-log n`` bias (normalised and not, logits up to 6x), ``tanh`` soft-capped logits,
  a flash-style chunked softmax with a running max and sum (``-inf`` and ``-1e4`` initial max, causal), a
  log-space softmax (``exp(s - logsumexp)``), "softmax + 1", chunk outputs merged by a numerically stable
  ``max + log1p(exp(-|d|))``; a Longformer ``unfold`` window (dynamo; TorchScript: "input size not accessible").
* **float16 attention** (``torch.autocast`` or ``.half()``: ALiBi, sliding window, soft-cap, sigmoid, ELU+1 /
  ReLU linear attention, the chunked running-max softmax, fp16 SDPA) drifts by 1e-4 .. 4e-3 of the output's scale
  with both exporters: ONNX Runtime's CPU runs the float16 ops in float32 (inserted casts) and drops the float16
  roundings torch makes between them (the mechanism forms40d / forms43k hold, in forms no suite has).
* **the dynamo exporter's ``logaddexp``** (``Log(Exp(a) + Exp(b))``) overflows where chunk outputs are merged by
  their log-sum-exp and the logits pass 88: NaN where torch is finite (TorchScript cannot export ``logaddexp``).
  The mechanism is forms30's ``logaddexp`` in a form no suite has.

Kept (the origin is always ``body``):
* ``alibi_amp`` (deep, both exporters; within the float16 budget, see below): 4-head attention with an in-model
  ALiBi bias (``-slope |i - j|``) under ``torch.autocast(float16)``.
* ``chunk_half`` (deep, both): a flash-style chunked softmax (chunks of 2 keys, running max ``m``, running sum
  ``l``, ``exp(m - m_new)`` rescaling) of ``.half()`` queries, keys and values.
* ``elu_half`` (shallow, both; within the float16 budget, see below): ELU+1 linear attention (``phi(q) (phi(k)^T
  v) / phi(q) sum phi(k)``) under ``torch.autocast(float16)``.
* ``lse_merge`` (shallow, dynamo): causal attention in chunks of 2 keys, each chunk's softmax output merged by
  ``torch.logaddexp`` of the running and the chunk's ``logsumexp``, logits at 20x.
* ``softcap_half`` (deep, both; screened and kept after the first run of the others, judged before it ran):
  Gemma-style soft-capped logits ``cap tanh(s / cap)`` on ``.half()`` queries, keys and values.

Judged drifts that are not (the judge's error, /tmp/h48a/judge.md): ``alibi_amp`` (deep) and ``elu_half`` (shallow)
under ``torch.autocast`` differ by 3e-4 .. 1e-3 of the scale: inside the float16 budget the catalogue holds a file
with float16 weights to (41G); the engine's WITHIN BUDGET is its documented answer.  ``chunk_half`` exported by the
dynamo exporter was WITHIN BUDGET too at the first run, where TorchScript's file was held to the float32 rule: its
float16 ``-inf`` / zero fills were read as a converter's weights (fixed, test_filled_half_constants.py).

Clean controls: ``softcap_f32`` (deep, float32; TorchScript), ``alibi_f32`` (deep, autocast off; both exporters),
``chunk_f32`` (deep, float32; dynamo), ``elu_f32`` (shallow, float32; TorchScript), ``lse_merge_cool`` (shallow,
logits at 1x; dynamo).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


class _Heads(nn.Module):
    """a fused qkv projection split into ``heads`` heads over the rows (the sequence), and the output projection."""

    def __init__(self, heads: int = 2) -> None:
        super().__init__()
        self.qkv, self.o, self.h = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH), heads

    def split(self, x: torch.Tensor):
        n = x.shape[0]
        q, k, v = self.qkv(x).chunk(3, -1)
        return tuple(t.view(n, self.h, WIDTH // self.h).transpose(0, 1) for t in (q, k, v))

    def merge(self, y: torch.Tensor) -> torch.Tensor:
        return self.o(y.transpose(0, 1).reshape(y.shape[1], WIDTH))


class AmpAlibi(_Heads):
    """4-head softmax attention with an ALiBi bias ``-slope_h |i - j|`` (slopes ``2 ** (-2 (h + 1))``) computed in
    the model, under ``torch.autocast(float16)`` when ``enabled``; inputs scaled by ``scale``."""

    def __init__(self, enabled: bool = True, scale: float = 4.0) -> None:
        super().__init__(4)
        self.enabled, self.scale = enabled, scale
        self.register_buffer("slopes", torch.tensor([2.0 ** (-2 * (i + 1)) for i in range(4)]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        pos = torch.arange(n, device=x.device)
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            q, k, v = self.split(x * self.scale)
            s = q @ k.transpose(1, 2) * q.shape[-1] ** -0.5
            s = s - self.slopes[:, None, None] * (pos[None] - pos[:, None]).abs()
            y = s.softmax(-1) @ v
        return self.merge(y.float())


class ChunkedSoftmax(_Heads):
    """memory-efficient attention: keys in chunks of ``chunk``, a running max ``m`` and sum ``l``, the accumulator
    rescaled by ``exp(m - m_new)`` (flash attention's online softmax), in ``dtype``; inputs scaled by ``scale``."""

    def __init__(self, dtype: torch.dtype = HALF, chunk: int = 2, scale: float = 4.0) -> None:
        super().__init__()
        self.dtype, self.chunk, self.scale = dtype, chunk, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.to(self.dtype) for t in self.split(x * self.scale))
        q = q * q.shape[-1] ** -0.5
        m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype)
        l, acc = torch.zeros_like(m), torch.zeros_like(q)
        for st in range(0, x.shape[0], self.chunk):
            s = q @ k[:, st:st + self.chunk].transpose(1, 2)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p, alpha = torch.exp(s - m_new), torch.exp(m - m_new)
            l = l * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + p @ v[:, st:st + self.chunk]
            m = m_new
        return self.merge((acc / l).float())


class AmpEluLinear(_Heads):
    """linear attention with the ELU+1 feature map (Katharopoulos et al.): ``phi(q) (phi(k)^T v)`` over
    ``phi(q) sum_j phi(k_j)``, under ``torch.autocast(float16)`` when ``enabled``; inputs scaled by ``scale``."""

    def __init__(self, enabled: bool = True, scale: float = 4.0) -> None:
        super().__init__()
        self.enabled, self.scale = enabled, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            q, k, v = self.split(x * self.scale)
            q, k = F.elu(q) + 1, F.elu(k) + 1
            num = q @ (k.transpose(1, 2) @ v)
            den = q @ k.sum(1, keepdim=True).transpose(1, 2)
            y = num / (den + 1e-6)
        return self.merge(y.float())


class LseMerge(_Heads):
    """causal attention in chunks of ``chunk`` keys; each chunk's softmax output (``nan_to_num`` where a row sees
    none of the chunk) merged into the running one by ``torch.logaddexp`` of their ``logsumexp``; logits scaled by
    ``scale``."""

    def __init__(self, scale: float = 20.0, chunk: int = 2) -> None:
        super().__init__()
        self.scale, self.chunk = scale, chunk

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.split(x * self.scale)
        q = q * q.shape[-1] ** -0.5
        i = torch.arange(x.shape[0], device=x.device)
        out = lse = None
        for st in range(0, x.shape[0], self.chunk):
            s = q @ k[:, st:st + self.chunk].transpose(1, 2)
            s = s.masked_fill(i[:, None] < i[None, st:st + self.chunk], -math.inf)
            c_lse = torch.logsumexp(s, -1, keepdim=True)
            c_out = torch.softmax(s, -1).nan_to_num(0.0) @ v[:, st:st + self.chunk]
            if out is None:
                out, lse = c_out, c_lse
                continue
            new = torch.logaddexp(lse, c_lse)
            out, lse = out * torch.exp(lse - new) + c_out * torch.exp(c_lse - new), new
        return self.merge(out)


def alibi_amp() -> nn.Module: return _deep(AmpAlibi)                                              # noqa: E704
def alibi_f32() -> nn.Module: return _deep(lambda: AmpAlibi(False))                                # noqa: E704
def chunk_half() -> nn.Module: return _deep(ChunkedSoftmax)                                        # noqa: E704
def chunk_f32() -> nn.Module: return _deep(lambda: ChunkedSoftmax(torch.float32))                  # noqa: E704
def elu_half() -> nn.Module: return _shallow(AmpEluLinear)                                         # noqa: E704
def elu_f32() -> nn.Module: return _shallow(lambda: AmpEluLinear(False))                           # noqa: E704
def lse_merge() -> nn.Module: return _shallow(LseMerge)                                            # noqa: E704
def lse_merge_cool() -> nn.Module: return _shallow(lambda: LseMerge(1.0))                          # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


class HalfSoftCap(_Heads):
    """attention with Gemma-style soft-capped logits ``cap * tanh(s / cap)`` on ``.half()`` queries, keys and values
    (float32 weights), the output back in float32; inputs scaled by ``scale``."""

    def __init__(self, dtype: torch.dtype = HALF, cap: float = 2.0, scale: float = 6.0) -> None:
        super().__init__()
        self.dtype, self.cap, self.scale = dtype, cap, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.to(self.dtype) for t in self.split(x * self.scale))
        s = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        s = torch.tanh(s / self.cap) * self.cap
        return self.merge((s.softmax(-1) @ v).float())


def softcap_half() -> nn.Module: return _deep(HalfSoftCap)                                         # noqa: E704
def softcap_f32() -> nn.Module: return _deep(lambda: HalfSoftCap(torch.float32))                   # noqa: E704
