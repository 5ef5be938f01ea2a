"""Held-out batch 41C for issue 30 point 8 (session 39): a blind first-run measurement from ONNX RUNTIME's side, **a
CPU kernel that computes otherwise than the ONNX spec or torch on a graph the exporter wrote right**, in the families
attention masking, arithmetic, distance, loss, cumulative functions and integer conversions (the session's other
held-out helper screened the dynamo / torch.export / onnxscript-optimizer machinery).  Screened with torch 2.13 /
ONNX Runtime 1.32 (``ORT_DISABLE_ALL``, drifttui's level), both exporters at their default opset, on bare one-node
graphs against torch and then through both exporters, after grepping every earlier suite (forms*.py and their
screened lists, forms_nan, fx_forms, real, upstream, benchmarks/causes_forms.py, the catalogue) and upstream threads
(microsoft/onnxruntime, pytorch/pytorch, tensorflow/tensorflow).  Written before the engine ran on any of them
(/tmp/heldC/judge.md of session 39): the first run's table is in test_forms41c.py.  Screening took about 35 minutes
(five rounds, some 60 kernels and exports).

Screened and matching (exact, or within 2e-7 relative), so not kept:
* kernels alone: ``Log`` / ``Sqrt`` / ``Reciprocal`` of subnormal values, ``Exp`` of -88 .. -110 (subnormal results
  kept), ``LogSoftmax`` of rows with 90 .. 110 gaps, ``Erf`` over 1e-5 .. 4.5, ``ReduceLogSumExp`` of rows holding
  +inf and of rows all -inf, ``ReduceL2`` of 1e19 and 1e-25 rows (inf and 0 on both sides), ``Round`` of halves and
  of 2**23 + 1, ``LayerNormalization`` of rows at a level of 1e2 .. 3e4 (the error of float32 inputs at that level,
  torch's too); ``Tanh`` of 1e-3 (1.2e-6 relative: under the tolerance);
* drifting, but a mechanism the suites hold (not kept): ``Sigmoid`` returning 0 from -20 down (forms40f, real.py),
  ``Sign`` of NaN (forms33), the float16 ``InsertCastTransformer`` rounding (forms39), float -> int saturation
  (forms40k's ``int_wrap``, microsoft/onnxruntime#17953), ``ReduceMax`` / ``ArgMax`` of NaN (forms_nan), float32
  ``CumSum`` against torch's double accumulation (forms39 / accumulate64);
* static shapes: both exporters fold a float ``torch.arange`` whose arguments are Python numbers into an
  initializer computed by torch (TorchScript's constant folding, the dynamo optimizer): exact.  Only a length the
  file declares dynamic keeps the ``Range`` node (the kept forms below declare one, as a deployed audio model does).

Kept (each drifts over drifttui's default tolerance with both exporters; four of the six pairs in deep models, 20
module calls):
* ``tone_grid`` (arithmetic / cumulative, deep, dynamic length): the time of each frame at a 10 ms hop,
  ``torch.arange(0.0, T * hop - hop / 2, hop)``, as the phase of a 50 Hz tone that modulates the frames.  Both
  exporters write ONNX ``Range``, whose spec is ``output[i] = start + i * delta``; torch's CPU ``arange`` computes
  ``start + i * step`` in double and rounds once.  ONNX Runtime's CPU ``Range`` kernel ADDS ``delta`` to a float32
  running value (``value += delta``, the loop of its first Range kernel, microsoft/onnxruntime#50; the same
  accumulating loop as tensorflow/tensorflow#58133's ``tf.range``), so the times drift by 1e-3 .. 1e-2 s over
  thousands of frames, and the tone's phase by much more (0.04 on a 0.18 output at 3000 frames);
* ``frame_upsample`` (integer conversion, dynamic length): frame features upsampled 5x by nearest neighbour,
  ``x[:, torch.arange(0.0, T, 1 / 5).long()]`` (a frame-rate change, 20 ms -> 4 ms): torch's ``i * 0.2`` lands on
  the integer every fifth index, ONNX Runtime's running sum lands a hair below it about as often as not, and the
  truncating ``Cast`` takes the previous frame (138 of 1000 indices at 200 frames).  Control: ``frame_upsample_off``
  (4x: 0.25 is a power of two, the running sum is exact);
* ``log_prob`` (loss, deep): the log-probabilities of a sharp classifier (logits scaled by 300) written
  ``torch.log(F.softmax(z, -1)).clamp(min=-100)`` (the floor torch's own ``binary_cross_entropy`` puts on its logs).
  torch's CPU softmax keeps probabilities below float32's smallest normal number (1.2e-38, a logit gap past 87.3)
  as subnormal values down to a gap of 103.3, so their log is -87.3 .. -103.3; ONNX Runtime's ``Softmax`` kernel
  (MLAS's exponential) flushes them to 0, whose log is -inf and clamps to -100, although its own ``Exp`` kernel
  keeps the subnormal results.  Control: ``log_prob_off`` (logits scaled by 100: no gap in the window).

Added after the first run's outputs were read, before the engine ran on them (the first run showed two forms above
less well posed than the judge assumed: ``tone_grid``'s 50 Hz phase amplifies float32 times so much that the ONNX
reference implementation itself lands 0.9 .. 1.7x the tolerance off torch, and ``log_prob``'s own float32 result is
over the tolerance at ``body`` where probabilities near a gap of 103 hold few bits); the same two mechanisms, well
conditioned:
* ``tone_slow`` (deep, dynamic length): ``tone_grid`` at 4 Hz (the reference 0.05 .. 0.09x the tolerance off
  torch, ONNX Runtime 10 .. 15x);
* ``capped_entropy`` (attention masking, deep): attention of each row over 16 learned memory slots with the scores
  soft-capped at 50 (Gemma 2's ``attn_logit_softcapping``: every gap below 100, so torch's probabilities are never
  0) and the attention entropy ``-(p * log p).sum(-1)``: torch finite, the file NaN (``0 * log 0``) on every row
  where ONNX Runtime's ``Softmax`` flushed a probability.  Control: ``capped_entropy_off`` (capped at 40: every gap
  below 80).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep

WIDTH = 32
# the forms whose input's length (dim 1) the file declares dynamic
DYNAMIC = {"tone_grid", "tone_slow", "frame_upsample", "frame_upsample_off"}


class ToneGrid(nn.Module):
    """the frames modulated by a tone at each frame's time, ``arange(0, T * hop - hop / 2, hop)`` (a 10 ms hop)."""

    def __init__(self, hop: float = 0.01, freq: float = 50.0) -> None:
        super().__init__()
        self.hop, self.freq = hop, freq

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.arange(0.0, x.shape[1] * self.hop - self.hop / 2, self.hop)
        return x * (1 + torch.sin(2 * math.pi * self.freq * t))[None, :, None]


class FrameUpsample(nn.Module):
    """nearest-neighbour upsampling of frames by ``factor``, the frame of each output step ``arange(0, T, 1 / f)``
    truncated."""

    def __init__(self, factor: int = 5) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.arange(0.0, x.shape[1], 1.0 / self.factor).long()
        return x[:, idx] * 0.5


class CappedEntropy(nn.Module):
    """attention of each row over a learned memory of 16 slots (Perceiver-style latents) with its scores soft-capped,
    ``cap * tanh(s / cap)`` (Gemma 2's ``attn_logit_softcapping`` of 50), and each query's attention entropy
    ``-(p * log p).sum(-1)`` added to what it reads."""

    def __init__(self, cap: float = 50.0, gain: float = 800.0) -> None:
        super().__init__()
        self.q = nn.Linear(WIDTH, WIDTH)
        self.memory = nn.Parameter(torch.randn(16, WIDTH))
        self.cap, self.gain = cap, gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.q(x) @ self.memory.t() * (self.gain / math.sqrt(WIDTH))
        p = F.softmax(self.cap * torch.tanh(s / self.cap), dim=-1)
        entropy = -(p * torch.log(p)).sum(-1, keepdim=True)
        return p @ self.memory + 0.1 * entropy


class LogProb(nn.Module):
    """a sharp classifier's log-probabilities, ``log(softmax(scale * proj(x))).clamp(min=-100)``."""

    def __init__(self, scale: float = 300.0) -> None:
        super().__init__()
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(F.softmax(self.proj(x) * self.scale, dim=-1)).clamp(min=-100.0) * 0.01


def tone_grid() -> nn.Module: return _deep(ToneGrid)                                          # noqa: E704
def tone_slow() -> nn.Module: return _deep(lambda: ToneGrid(freq=4.0))                        # noqa: E704
def capped_entropy() -> nn.Module: return _deep(CappedEntropy)                                # noqa: E704
def capped_entropy_off() -> nn.Module: return _deep(lambda: CappedEntropy(cap=40.0))          # noqa: E704
def frame_upsample() -> nn.Module: return FrameUpsample(5).eval()                             # noqa: E704
def frame_upsample_off() -> nn.Module: return FrameUpsample(4).eval()                         # noqa: E704
def log_prob() -> nn.Module: return _deep(LogProb)                                            # noqa: E704
def log_prob_off() -> nn.Module: return _deep(lambda: LogProb(100.0))                         # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


def long_inputs() -> torch.Tensor:
    """one sequence of 1500 .. 3000 frames."""
    return torch.randn(1, int(torch.randint(1500, 3001, ())), WIDTH)


def frames_inputs() -> torch.Tensor:
    """one sequence of 150 .. 400 frames."""
    return torch.randn(1, int(torch.randint(150, 401, ())), WIDTH)


INPUTS = {"tone_grid": "long_inputs", "tone_slow": "long_inputs", "frame_upsample": "frames_inputs", "frame_upsample_off": "frames_inputs"}


def export_kwargs(model: str, exporter: str) -> dict:
    """What ``torch.onnx.export`` is given for ``model``: a dynamic dim 1 (the length) for the sequence forms."""
    if model not in DYNAMIC:
        return {}
    if exporter == "dynamo":
        return {"dynamic_shapes": ({1: torch.export.Dim("length", min=2, max=8192)},)}
    return {"input_names": ["x"], "dynamic_axes": {"x": {1: "length"}}}
