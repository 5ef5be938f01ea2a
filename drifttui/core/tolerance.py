"""Dtype-aware tolerance: a float16 / bfloat16 value cannot be held to float32's 1e-4.

One rounding to float16 moves a value by up to eps/2 relative (eps = 2**-10 for float16,
2**-7 for bfloat16); a layer computed in that precision accumulates a few such roundings, and
float32 noise upstream flips roundings at a precision cast.  So a low-precision value gets an
effective relative tolerance of ``max(rtol, K_EPS * eps(dtype))``, relative to the layer's
scale like rtol itself; float32 / float64 values keep ``rtol``.  K_EPS = 4: a few roundings of
a well-conditioned layer (measured: an fp16 Linear fed through ``.half()`` differs from torch
by ~7e-4 relative = 0.7 eps, a real fp16 drift such as a wrong epsilon by far more).
"""
from __future__ import annotations

from typing import Any, Optional

K_EPS = 4
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}

DTYPE_RULE = (f"float16 / bfloat16 values: rtol_eff = max(rtol, {K_EPS} * eps), eps = 2^-10 (float16), "
              "2^-7 (bfloat16)")


def dtype_name(a: Any) -> Optional[str]:
    """'float16', 'bfloat16', ... of a torch tensor or numpy array (None when unknown)."""
    dt = getattr(a, "dtype", None)
    if dt is None:
        return None
    return str(dt).replace("torch.", "")


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
