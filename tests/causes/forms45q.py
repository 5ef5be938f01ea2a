"""Held-out batch 45Q for issue 30 (session 45): a blind first-run measurement from a fresh angle, **the numerics of
LLM inference code written in plain torch** (llama.cpp ports, nanoGPT / gpt-fast style, Gemma / Mistral / Phi
reference code, AutoGPTQ / AWQ / SmoothQuant kernels' torch fallbacks), screened with torch 2.13 / ONNX Runtime 1.32
(CPU), both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, after grepping
every earlier suite (forms40k holds float16 rotary angles and a float16 RMSNorm without its upcast, forms42i rotary
from int64 positions, ALiBi slopes, KV-cache windows and the logits processors; none holds packed int4 / int32
weight unpacking, a sign-extending nibble shift, soft-capping before a temperature, or in-forward activation
quantisation).  Written before the engine diagnosed any of them (/tmp/h45Q/judge.md).  About 20 minutes, some 130
exports (/tmp/h45Q/s1..s6.py).

Screened, and what it showed:
* matching (float32: within 2e-7 of the output's scale; float16: within the float16 noise, 2e-4 .. 9e-4 of the
  scale, both exporters, both ORT levels): rotary embeddings interleaved (``x[..., 0::2]`` / ``x[..., 1::2]``
  stacked back) and half-rotated, ``inv_freq`` computed in forward from ``arange``, NTK-scaled bases, YaRN's ramp
  blend and mscale (float32 and float16 tables), positions from ``mask.long().cumsum(-1) - 1 + past``; Gemma's
  RMSNorm ``(1 + w.float())`` with the float32 upcast (float16 and bfloat16 activations: exact), Llama's RMSNorm,
  one without the upcast at unit scale; GeGLU (``gelu`` exact and ``tanh``) and SwiGLU in float16; grouped-query
  attention by ``repeat_interleave`` and by ``[:, :, None].expand(...).reshape``, causal + sliding-window masks from
  ``triu`` / ``tril(-w)`` / ``finfo.min`` (float32 and float16); a KV cache written by ``index_copy`` and by
  ``scatter`` into a zero buffer, float16 and bfloat16 cache round trips (``k.to(bf16).float()``); llama.cpp Q4_0
  (``(p & 0xF) - 8``, ``p >> 4`` of uint8) and per-channel int8 weights dequantised in forward in float16; int8
  per-token activation quantisation in float32; float8 e4m3 activations (dynamo; TorchScript refuses the dtype);
  ALiBi with BLOOM's absolute key positions (4 and 12 heads, float16; slopes times integer positions round alike);
  Gemma-2-style attention soft-capping ``tanh(s / c) * c`` before a float32 softmax; temperature + ``log_softmax``
  of float16 logits; transformers ``LlamaModel`` / ``GemmaModel`` / ``Gemma2Model`` / ``PhiModel`` /
  ``Qwen2Model`` / ``MistralModel`` in float16 (dynamo; Gemma2 1.4e-3, within the float16 noise at that depth).
* errors, not drifts: bfloat16 compute (ONNX Runtime's CPU has no bfloat16 MatMul / Sub, rotary files refused);
  every transformers decoder with TorchScript (``aten::diff`` in the mask code); an int32-packed GPTQ unpacking
  written with ``>>`` between broadcast int32 tensors (dynamo's conversion fails).
* drifting, but a form the suites hold (not kept): float16 rotary angles at positions ~1500 (forms40k
  ``half_rope``, 0.1 off).

Kept (the origin is always ``body``; first-run figures are drifttui's, seed 7):
* ``gptq_unpack`` (deep, TorchScript at opset 18: drifttui's own TorchScript export at opset 17 refuses
  ``aten::bitwise_and``, so the file is the user's, exported as torch advises; the dynamo file is right):
  AutoGPTQ's torch dequantisation, ``bitwise_right_shift(qweight.unsqueeze(1).expand(-1, 8, -1), wf).to(int8) &
  15``, of an int32 ``qweight`` whose top nibble is 8 or more (a negative int32): TorchScript lowers ``>>`` of a
  signed tensor to a truncating ``Div`` by ``2 ** n``, so the nibbles of negative words come out wrong (forms30's
  ``shift`` mechanism in a new form: on the module's state alone, the shift feeding a narrowing cast and a mask);
  0.6 of the scale off.
* ``nibble_signext`` (deep, TorchScript; the dynamo file is right): signed int4 from a packed uint8 by
  ``(p.to(int8) << 4) >> 4`` and ``p.to(int8) >> 4``: the same truncating lowering of ``>>`` (the low nibble's is
  exact: ``p << 4`` is a multiple of 16), on the state alone; 0.12 off.
* ``softcap_temperature`` (shallow, both exporters): final-logit soft-capping as Gemma-2 writes it,
  ``tanh(l / 30) * 30``, of a float16 LM head, then a temperature of 0.1 and a float32 softmax: ONNX Runtime
  computes the float16 Div / Tanh / Mul chain in float32 and drops the roundings torch makes, the temperature
  magnifies them past the float16 budget; 1.6e-2 off.
* ``w4a4_half`` (deep, both exporters): per-token activation quantisation to int4 levels in float16 (``h * 0.1``,
  ``amax / 7``, ``(h / s).round().clamp(-8, 7)``) against int8 weights: torch rounds ``h / s`` to float16 before
  ``round``, the file does not, and values near a half step land on the other level; and the exporters write the
  Python scalar 0.1 as the float16 0.0999756 where torch's ``mul`` holds it in float32 (the first op that differs).

Clean controls (the same code where nothing drifts): ``gptq_unpack`` with dynamo, ``gptq_positive`` (TorchScript at
opset 18: top nibbles below 8, no negative word), ``nibble_signext`` with dynamo, ``softcap_temperature_f32``
(TorchScript), ``w4a4_f32`` (dynamo), ``kv_int8_half`` (TorchScript: an int8 KV cache quantised per token in
float16, within the float16 budget: 9.7e-4 of the scale; the right answer is no error finding).  The first float16
variants (cap 15, int8 activation levels, ``w8a8`` at qmax 127) drifted 2e-3 .. 6e-3, within drifttui's float16
budget (said WITHIN BUDGET): not kept.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


class GPTQUnpack(nn.Module):
    """AutoGPTQ's torch fallback: an int32 ``qweight`` (8 nibbles a word, ``top`` bounds the nibbles drawn)
    unpacked by ``bitwise_right_shift`` and ``& 15``, float16 scales, zero point 8, a float16 matmul."""

    def __init__(self, top: int = 16) -> None:
        super().__init__()
        nib = torch.randint(0, top, (WIDTH // 8, 8, WIDTH))
        packed = torch.zeros(WIDTH // 8, WIDTH, dtype=torch.int64)
        for i in range(8):
            packed |= nib[:, i] << (4 * i)
        packed = torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed).to(torch.int32)
        self.register_buffer("qweight", packed)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0))
        self.register_buffer("scales", (torch.rand(1, WIDTH) * 0.02 + 0.01).to(HALF))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.bitwise_right_shift(self.qweight.unsqueeze(1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        w = torch.bitwise_and(w.to(torch.int8), 15).reshape(WIDTH, WIDTH)
        return torch.matmul(x.to(HALF), self.scales * (w.to(HALF) - 8)).float()


class NibbleSignExt(nn.Module):
    """signed int4 weights packed two to a uint8: the low nibble sign-extended by ``(p.to(int8) << 4) >> 4``, the
    high one by ``p.to(int8) >> 4``, per-row scales."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("packed", torch.randint(0, 256, (WIDTH, WIDTH // 2), dtype=torch.uint8))
        self.register_buffer("scales", torch.rand(WIDTH, 1) * 0.02 + 0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.packed.to(torch.int8)
        w = torch.stack(((p << 4) >> 4, p >> 4), -1).view(WIDTH, WIDTH).float() * self.scales
        return F.linear(x, w)


class SoftcapTemperature(nn.Module):
    """a ``dtype`` LM head, Gemma-2's final-logit soft-capping ``tanh(l / cap) * cap``, a temperature, softmax in
    float32."""

    def __init__(self, dtype: torch.dtype = HALF, cap: float = 30.0, temperature: float = 0.1, gain: float = 24.0) -> None:
        super().__init__()
        self.lm = nn.Linear(WIDTH, WIDTH, bias=False).to(dtype)
        self.dtype, self.cap, self.t, self.gain = dtype, cap, temperature, gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.lm(x.to(self.dtype) * self.gain)
        logits = torch.tanh(logits / self.cap) * self.cap
        return (logits.float() / self.t).softmax(-1)


class W8A8(nn.Module):
    """SmoothQuant-style W8A8 in ``dtype``: activations quantised per token in forward (absmax / 127, ``round``,
    ``clamp``), int8 weights with per-channel scales."""

    def __init__(self, dtype: torch.dtype = HALF, qmax: int = 7, gain: float = 1.0) -> None:
        super().__init__()
        self.dtype, self.qmax, self.gain = dtype, qmax, gain
        self.register_buffer("wq", torch.randint(-127, 128, (WIDTH, WIDTH), dtype=torch.int8))
        self.register_buffer("ws", (torch.rand(WIDTH) * 0.01 + 0.002).to(dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(self.dtype) * self.gain
        sx = h.abs().amax(-1, keepdim=True) / self.qmax
        xq = (h / sx).round().clamp(-self.qmax - 1, self.qmax)
        return ((xq @ self.wq.to(self.dtype).t()) * sx * self.ws).float()


class KVInt8(nn.Module):
    """an int8 KV cache quantised per token in float16 (absmax / 127), dequantised, one float16 attention."""

    def __init__(self) -> None:
        super().__init__()
        self.kv = nn.Linear(WIDTH, 2 * WIDTH, bias=False).to(HALF)
        self.q = nn.Linear(WIDTH, WIDTH, bias=False).to(HALF)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(HALF)
        k, v = self.kv(h).view(-1, 2, WIDTH).unbind(1)
        deq = []
        for t in (k, v):
            s = t.abs().amax(-1, keepdim=True) / 127
            deq.append((t / s).round().clamp(-128, 127).to(torch.int8).to(HALF) * s)
        att = (self.q(h) @ deq[0].t() / WIDTH ** 0.5).float().softmax(-1).to(HALF)
        return (att @ deq[1]).float()


def gptq_unpack() -> nn.Module: return _deep(GPTQUnpack)                                           # noqa: E704
def gptq_positive() -> nn.Module: return _deep(lambda: GPTQUnpack(8))                               # noqa: E704
def nibble_signext() -> nn.Module: return _deep(NibbleSignExt)                                     # noqa: E704
def softcap_temperature() -> nn.Module: return _shallow(SoftcapTemperature)                        # noqa: E704
def softcap_temperature_f32() -> nn.Module: return _shallow(lambda: SoftcapTemperature(torch.float32))  # noqa: E704
def w4a4_half() -> nn.Module: return _deep(lambda: W8A8(gain=0.1))                                  # noqa: E704
def w4a4_f32() -> nn.Module: return _deep(lambda: W8A8(torch.float32, gain=0.1))                    # noqa: E704
def kv_int8_half() -> nn.Module: return _deep(KVInt8)                                              # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
