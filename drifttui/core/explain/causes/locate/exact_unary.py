"""The reference evaluator's float32 elementwise functions, correctly rounded.

``onnx.reference`` computes ``Tanh``, ``Exp``, ``Log``, ``Sin`` ... of a float32 tensor with numpy's float32 ufuncs,
which numpy runs through SIMD approximations (AVX-512 / SVML): a few units in the last place off the function, as
ONNX Runtime's MLAS kernels are.  The spec means the function itself, and torch's kernels round it (nearly) exactly.
Measured: numpy's float32 ``tanh`` is 1 ulp off the correctly rounded value for 41% of arguments in [3, 10], torch's
for 0.2%, MLAS's up to 5 ulps off; where ``1 - tanh(u)^2`` then cancels (a SAC policy's log-prob correction), the
reference evaluator drifted with ONNX Runtime and the kernel's deviation read as the graph's (kind ``export``).
Here each such op of a float32 input is computed in float64 and rounded once: the value the op means, so
``evaluate.localise`` sides with whichever side computes the function, not with numpy's approximation.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

# ONNX op -> the numpy function; each is one ufunc call that numpy vectorises for float32 with an approximation
FUNCTIONS = {"Tanh": np.tanh, "Exp": np.exp, "Log": np.log, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan,
             "Sinh": np.sinh, "Cosh": np.cosh, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan,
             "Asinh": np.arcsinh, "Acosh": np.arccosh, "Atanh": np.arctanh}


def _exact(fn: Any) -> Any:
    def _run(self: Any, x: np.ndarray) -> tuple[np.ndarray]:
        with np.errstate(all="ignore"):
            if x.dtype == np.float32:
                return (fn(x.astype(np.float64)).astype(np.float32),)
            return (fn(x),)
    return _run


@lru_cache(maxsize=None)
def new_ops() -> list[Any]:
    """``ReferenceEvaluator(new_ops=...)``'s classes, one per op of ``FUNCTIONS`` (built once: onnx.reference is
    imported where the reference evaluator runs)."""
    from onnx.reference.ops._op import OpRunUnaryNum

    return [type(name, (OpRunUnaryNum,), {"op_domain": "", "_run": _exact(fn)}) for name, fn in FUNCTIONS.items()]
