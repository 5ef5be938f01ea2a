"""The tolerance rule, in one place, and its dtype-aware floor.

A value is within the tolerance when every element has ``|d| <= atol + max(rtol, floor) * scale``,
``scale`` being the comparison's max |torch| (``bound``); it fails the tolerance otherwise.  The
decide stage applies it (``metrics.Stats.fails_at``, ``metrics.Aggregate.failing``) and a patch's
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

from typing import Any

from drifttui.core.dtypes import LOW_PRECISION, name_of

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
