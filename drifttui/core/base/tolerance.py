"""The tolerance rule, in one place, and its dtype-aware floor.

A value is within the tolerance when every element has ``|d| <= atol + max(rtol, floor) * scale``,
``scale`` being the comparison's max |torch| (``bound``); it fails the tolerance otherwise.  The
decide stage applies it (``metrics.Stats.fails_at``, ``aggregate.Aggregate.failing``) and a patch's
verification applies the same rule.

Dtype-aware floor: a float16 / bfloat16 value cannot be held to float32's 1e-4.

One rounding to float16 moves a value by up to eps/2 relative (eps = 2**-10 for float16,
2**-7 for bfloat16); a layer computed in that precision accumulates a few such roundings, and
float32 noise upstream flips roundings at a precision cast.  So a low-precision value gets an
effective relative tolerance of ``max(rtol, K_EPS * eps(dtype))``, relative to the layer's
scale like rtol itself; float32 / float64 values keep ``rtol``.  K_EPS = 4: a few roundings of
a well-conditioned layer (measured: an fp16 Linear fed through ``.half()`` differs from torch
by ~7e-4 relative = 0.7 eps, a real fp16 drift such as a wrong epsilon by far more).
"""
from __future__ import annotations

import math
from typing import Any, Optional

from drifttui.core.base.dtypes import LOW_PRECISION, name_of

K_EPS = 4
EPS = LOW_PRECISION

DTYPE_RULE = (f"float16 / bfloat16 values: rtol_eff = max(rtol, {K_EPS} * eps), eps = 2^-10 (float16), "
              "2^-7 (bfloat16)")


dtype_name = name_of


def effective_rtol(rtol: float, *values: Any) -> float:
    """``rtol`` widened for the lowest precision among ``values`` (the torch and ONNX sides)."""
    eps = max((EPS.get(dtype_name(v) or "", 0.0) for v in values), default=0.0)
    return max(rtol, K_EPS * eps) if eps else rtol


def rtol_floor(*values: Any) -> float:
    """The relative-tolerance floor of the lowest precision among ``values``: K_EPS * eps for
    float16 / bfloat16, 0 otherwise.  Stored with each comparison so that the decide stage applies
    ``max(rtol, floor)`` at any tolerance (a re-decided result equals a fresh one)."""
    eps = max((EPS.get(dtype_name(v) or "", 0.0) for v in values), default=0.0)
    return K_EPS * eps


def bound(atol: float, rtol: Any, scale: Any, floor: Any = 0.0) -> Any:
    """The largest |d| within the tolerance at ``scale`` (scalars, or numpy arrays element-wise)."""
    if isinstance(rtol, float) and isinstance(floor, float):
        return atol + max(rtol, floor) * scale
    import numpy as np

    return atol + np.maximum(rtol, floor) * scale


# --- the precision budget of a reduced-precision file (float16 / bfloat16 conversions, int8) ----------
# A node computed in reduced precision may differ from torch by what its format costs.  Its budget is a
# relative tolerance (of its output's scale, like rtol):
#   float16 / bfloat16: K_EPS * eps (a few roundings of its inputs and output) + sqrt(depth) * U_ACC, the
#     probabilistic growth of a length-``depth`` sum rounded at each step in the accumulator's precision
#     (ONNX Runtime's CPU and CUDA kernels accumulate float16 MatMul / Conv in float32: U_ACC = 2^-24);
#     data movement (Reshape, Transpose, Gather...), Relu and max pooling round nothing: 0.
#   int8: K_Q * (act_step + weight_step) / 2: each quantized input is off by up to +-scale/2 per element,
#     step being that scale over the value it quantizes: an activation's is the file's own scale over the
#     largest value it dequantizes to on sample 0, 1 / max|q - zero point| (static scales as calibrated;
#     DynamicQuantizeLinear's from the tensor's min / max: 1/255 for a one-signed tensor, up to 2/255);
#     a weight's 1 / max|q| of its int8 values; int32 accumulation is exact.
#     An exact op (Gather, Reshape...) fed a dequantized int8 weight: K_Q * weight_step / 2, the weight's rounding.
#   int4 (or any bits) weight-only, MatMulNBits: K_Q * weight_step / 2, weight_step = the largest block
#     scale over max |W| (float32 activations: nothing else is rounded).
# A layer's own budget is the root sum of squares of its nodes' budgets; the budget of a layer's output
# (and of the model outputs) the root sum of squares over every reduced node computed before it.
K_Q = 3
# a layer over its budget whose measured share of the output error is below this is not paying for
# precision (keeping it in float32 is not what helps): a genuine drift, decided in core/decide
GENUINE_SHARE = 0.05
U_ACC = 2.0 ** -24
EXACT_OPS = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Gather", "GatherElements", "Slice",
             "Concat", "Split", "Identity", "Expand", "Shape", "Size", "Relu", "MaxPool", "Tile", "Pad",
             "DepthToSpace", "SpaceToDepth", "Where", "Equal", "Less", "Greater", "Not", "And", "Or",
             "ScatterND", "Range", "ConstantOfShape", "Constant", "Neg", "Abs", "GlobalMaxPool", "ReduceMax",
             "ReduceMin", "ArgMax", "ArgMin", "TopK", "DequantizeLinear"}

BUDGET_RULE = (f"reduced-precision layers: |d| <= atol + max(rtol, budget) * scale; a node's budget: float16/bfloat16 "
               f"{K_EPS} eps + sqrt(depth) 2^-24, int8 {K_Q} (act_step + weight_step) / 2 (step = scale / max|x|; an "
               "activation's: 1 / max|q - zero point| of the file's own quantizer on sample 0), int4 weight-only "
               f"{K_Q} weight_step / 2 (the largest block scale / max|W|); a layer's own error: "
               "root sum of squares over its nodes, its output and the model outputs: over every reduced node before "
               "them")


def node_budget(fmt: str, op_type: str, depth: int, act_step: float = 0.0, weight_step: float = 0.0) -> float:
    """The relative error one node computed in ``fmt`` may add (see BUDGET_RULE)."""
    if op_type in EXACT_OPS or depth == 0:      # depth 0: a widening Cast
        # ... but an exact op on a dequantized int8 weight (a Gather from a quantized embedding
        # table) passes on that weight's rounding, which no other node of the layer budgets
        return K_Q * weight_step / 2.0 if fmt.startswith("int") else 0.0
    if fmt.startswith("int"):              # int8; int4 weight-only (MatMulNBits): act_step 0
        return K_Q * (act_step + weight_step) / 2.0
    eps = EPS.get(fmt, 0.0)
    return K_EPS * eps + math.sqrt(max(1, depth)) * U_ACC if eps else 0.0


# --- the budget derived from the conversion itself (core/capture/rounding.py) -------------------------------
# A layer PyTorch can recompute in the file's precision (its inputs and weights rounded as the file rounds
# them) is held to SAFETY x that recomputation's deviation (max |d| / max |torch|, sample 0) where that is below
# the worst-case bound above; the bound stays the cap (a heavy-tailed int8 layer whose recomputation loses as
# much as the file is over budget: its precision costs, the keep-list's business) and the budget of a layer
# that cannot be recomputed.  SAFETY: a clean file's own error is 0.55 to 1.91 times the recomputation's
# deviation over every clean file of the precision suites (docs/deploy.md, "A budget from the conversion itself")
SAFETY = 3.0
DERIVED_RULE = (f"a layer PyTorch recomputes in the file's precision (its inputs and weights rounded as the file "
                f"rounds them, sample 0): own budget = min(worst-case bound, {SAFETY:g} x that recomputation's "
                "max |d| / max |torch|), judged alone (either test) when below the bound")


def derived_budget(worst: float, measured: Optional[float]) -> float:
    """A layer's own budget: SAFETY x the measured deviation of its recomputation in the file's precision,
    capped by the worst-case bound; the bound where it was not recomputed (``measured`` None)."""
    if measured is None or worst <= 0.0 or measured != measured:
        return worst
    return min(worst, SAFETY * measured)
