"""Upstream drift forms found for issue 30 point 8 in session 30 (held-out batch D), screened in the **special math
and type-promotion** family no earlier batch screened.  With torch 2.13 / ONNX Runtime 1.32, both exporters at
their default opset, on inputs that hit each function's edge (exact zeros, negative integers, +-1e-30, +-40,
+-100, +-1e4, values past float16's range):

* do not export at all (TorchScript: "Exporting the operator ... is not supported"; dynamo: no torchlib function):
  ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma``, ``erfinv``, ``i0`` / ``special.i0e`` / ``special.i1``,
  ``copysign``, ``hypot``, ``frexp``, ``nextafter`` (both); ``sinc``, ``xlogy``, ``special.xlog1py``,
  ``special.entr``, ``float_power``, ``trunc`` / ``frac`` / ``fix``, ``heaviside``, ``ldexp``, ``deg2rad`` /
  ``rad2deg``, ``cosh`` / ``sinh`` (TorchScript only); ``trunc`` of an integer tensor, ``exp`` / ``log`` /
  ``sigmoid`` / ``erf`` / ``atan2`` of an integer tensor and ``bool + bool`` give files ONNX Runtime refuses
  (TorchScript: no integer Exp/Sigmoid kernel; both: no bool Add); ``GELU`` / ``erf`` of a float64 model has no
  double ``Erf`` kernel in ONNX Runtime's CPU provider (an error, not a drift);
* match torch (relative error per element <= 2e-7): dynamo's ``sinc`` at 0 and at integers, ``xlogy`` /
  ``xlog1py`` / ``entr`` at 0 (pytorch/pytorch#179784's form), ``float_power`` (float64), ``trunc`` / ``frac`` of
  negatives, ``heaviside`` at 0, ``ldexp`` (also past float32's range), ``deg2rad``; ``nan_to_num`` of float32
  with the default and explicit replacements (pytorch/pytorch#70886's op); integer true division (also int64
  past 2**24, pytorch/pytorch#43787), int * / + python float, int64 past 2**53 through Add / Mul / Mod,
  int32 / int16 / int8 / uint8 wrap-around, ``bool`` sums, products, means and masks, ``softmax`` /
  ``log_softmax`` / ``logsumexp`` of integer values made float, float64 models (softmax, layer_norm, tanh,
  sigmoid, pow, a cancellation ``(x + 1e10) - 1e10``), float32 * float64 0-d tensors, ``torch.div`` truncating
  and flooring int64 (TorchScript), ``//`` of int64 past 2**53 (both);
* drift in families the suites already hold (so not kept): ``logit(sigmoid(x), eps)`` (ORT's Sigmoid near 1),
  ``signbit`` / ``atan2`` of zeros, ``clamp`` of an integer by a float (TorchScript), int64 ``mean(dtype=float)``
  (dynamo), an int32 ``cumsum`` past 2**31 (TorchScript), ``log_ndtr`` / ``logcumsumexp`` / ``logaddexp2`` of
  large arguments, ``torch.div(rounding_mode=...)`` of int64 past 2**53 (dynamo: through a float Cast, forms39's
  ``time_bucket``); a ``.half()`` whose rounding ONNX Runtime drops (its cast-pair removal: ``x.half()`` of 1e-30
  then ``log``, ``nan_to_num`` of a float16 cast past 65504 with TorchScript) is the observer-effect behaviour
  how-it-works.md describes; float16 elementwise ops with a python scalar (``x.half() + 1000.3``, ``/ 7``,
  ``1.0001 - x``) and ``sigmoid`` / ``gelu`` / ``layer_norm`` of float16 differ by one float16 rounding, inside
  the float16 tolerance.

What drifts, and is kept: **a ``dtype=`` argument applied to the result instead of the input**.  torch's
``softmax`` / ``log_softmax`` / ``softmin`` / ``mean`` with ``dtype=torch.float32`` cast the float16 input to
float32 *before* the op ("the input tensor is casted to dtype before the operation is performed"); both exporters
compute the op in float16 and cast its result (TorchScript's symbolic ``softmax``: ``Cast(Softmax(x))``;
torchlib's ``aten_softmax`` / ``aten_special_log_softmax`` / ``aten_mean_dim``: ``op.Cast(result, to=dtype)``),
so the float32 result holds float16 roundings: 4e-4 .. 3e-3 off.  microsoft/onnxruntime#20057 ("existing ONNX
exporter do the cast after the operation, which is not correct", Mistral's ``softmax(attn_weights, dim=-1,
dtype=torch.float32)``), pytorch/pytorch#153393 ("[ONNX] Cast before calling Softmax when dtype is specified",
closed unmerged), pytorch/pytorch#81939 (``half_to_float``).  TorchScript's ``mean(dtype=)`` casts first (right;
the control ``pool_mean_dtype`` with TorchScript).

* ``half_logprobs`` (deep): a float16 projection head whose log-probabilities are taken in float32,
  ``F.log_softmax(logits_half, -1, dtype=torch.float32)``, after the stem;
* ``softmin_gate`` (shallow): a gate ``F.softmin(x.half(), -1, dtype=torch.float32) * x`` over float16 features;
* ``softmin_deep`` (deep): the same gate at temperature 1/16, times the number of features (a router's
  renormalised weights), after forms30's 16-call stem;
* ``pool_mean_dtype`` (deep, dynamo): a float16 feature map pooled with ``torch.mean(f, (2, 3),
  dtype=torch.float32)`` in a 17-call CNN (forms40a's stem).
* clean controls: ``half_logprobs_cast`` (``log_softmax(logits.float(), -1)``), ``pool_mean_dtype`` with
  TorchScript (its ``mean`` casts first), ``float_logprobs`` (``dtype=torch.float32`` on a float32 input).

Tried and not kept: ``F.softmax(scores_half, -1, dtype=torch.float32)`` inside a self-attention (its float32
probabilities averaged over the values): the error, 2**-12 of each probability, stays under the tolerance; a
``softmin_deep`` at temperature 0.05 (its file also rounds the python scalar 0.05 to float16 where torch divides
by the float: two drifts, no single patch).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow
from tests.causes.forms40a import DeepCNN

WIDTH = 32


class HalfLogProbs(nn.Module):
    """a float16 projection whose log-probabilities are taken in float32 (``cast_first``: ``logits.float()``)."""

    def __init__(self, cast_first: bool = False, half: bool = True) -> None:
        super().__init__()
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.cast_first, self.half = cast_first, half

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.proj(x) * 4.0
        logits = logits.half() if self.half else logits
        if self.cast_first:
            return F.log_softmax(logits.float(), dim=-1)
        return F.log_softmax(logits, dim=-1, dtype=torch.float32)


class SoftminGate(nn.Module):
    """a gate over float16 features (a half-precision activation cache), normalised in float32 at a temperature;
    ``renorm``: the gate scaled so that a uniform gate is 1 (a router's weights times the number of experts)."""

    def __init__(self, temperature: float = 1.0, renorm: bool = False) -> None:
        super().__init__()
        self.temperature, self.renorm = temperature, renorm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = F.softmin(x.half() / self.temperature, dim=-1, dtype=torch.float32)
        return gate * x.shape[-1] * x if self.renorm else gate * x


class PoolMeanDtype(nn.Module):
    """a float16 feature map (ReLU features + a level) pooled to float32 channel means."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = (torch.relu(x) + 6.0).half()
        return torch.mean(f, dim=(2, 3), dtype=torch.float32, keepdim=True) - 6.0 + x


def half_logprobs() -> nn.Module: return _deep(HalfLogProbs)                              # noqa: E704
def half_logprobs_cast() -> nn.Module: return _deep(lambda: HalfLogProbs(cast_first=True))       # noqa: E704
def float_logprobs() -> nn.Module: return _deep(lambda: HalfLogProbs(half=False))                # noqa: E704
def softmin_gate() -> nn.Module: return _shallow(SoftminGate)                             # noqa: E704
def softmin_deep() -> nn.Module: return _deep(lambda: SoftminGate(0.0625, renorm=True))   # noqa: E704


def pool_mean_dtype() -> nn.Module:
    torch.manual_seed(0)
    return DeepCNN(PoolMeanDtype()).eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


def image_inputs() -> torch.Tensor:
    return torch.randn(2, 3, 16, 16)
