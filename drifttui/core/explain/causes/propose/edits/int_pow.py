"""The exact integer power (issue 30 point 2): an int32/int64 ``Pow`` whose values ONNX Runtime rounds.

torch's integer ``pow`` multiplies integers (repeated squaring, wrapping on overflow, as numpy's does);
ONNX Runtime's CPU ``Pow`` kernel computes an integer power through double ``std::pow`` and casts back, so
a power past 2**53 loses its low digits (a polynomial hash ``base ** q % m`` lands in another bucket).  The
ONNX reference implementation multiplies integers, so the localisation names the kernel (kind ``runtime``).
No export route changes the kernel; a graph counterfactual can: the power written as repeated squaring in the
integer type (``onnx/edit/lowerings/int_pow.py``).  Proposed for each integer ``Pow`` of the origin whose value on the
case differs from the exact integer power of its inputs (none otherwise); verified like any patch.

Its class is ``dtype``: the integer op is computed in a floating type that cannot hold its values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.rewriting import static_value

MIN_BITS = 6                # exponents below 64: every power of |base| >= 2 past that wraps in int64 anyway
UPSTREAM = "microsoft/onnxruntime#19298"


def exact_power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """torch's integer power: repeated squaring in the base's integer type, wrapping on overflow; a negative exponent
    (of a tensor: torch refuses only a Python number's) gives 1 for a base of 1, -1 or 1 by the exponent's parity for
    -1, else 0 (torch's ``powi``)."""
    b, e0 = np.broadcast_arrays(np.asarray(base), np.asarray(exponent).astype(np.asarray(base).dtype))
    r, b, e = np.ones_like(b), b.copy(), np.maximum(e0, 0)
    with np.errstate(over="ignore"):
        while (e > 0).any():
            r = np.where(e % 2 == 1, r * b, r)
            b, e = b * b, e // 2
    below = np.where(np.asarray(base) == 1, 1, np.where(np.asarray(base) == -1, np.where(e0 % 2 == 1, -1, 1), 0))
    return np.where(e0 < 0, below.astype(r.dtype), r)


def int_pow_patches(case: Case) -> list[Patch]:
    """One patch per integer Pow of the origin whose value is not the exact power of its inputs."""
    pows, known = picked_values(case, lambda n: n.op_type == "Pow" and len(n.input) == 2 and n.output)
    out = []
    for node in pows:
        base, exponent, got = (_value(case, known, v) for v in (node.input[0], node.input[1], node.output[0]))
        if base is None or exponent is None or got is None:
            continue
        base, exponent, got = np.asarray(base), np.asarray(exponent), np.asarray(got)
        if base.dtype.kind not in "iu" or exponent.dtype.kind not in "iu":
            continue
        want = exact_power(base, exponent)
        if want.shape != got.shape or not (want != got).any():
            continue
        out.append(_patch(case, node, base.dtype, int(exponent.max(initial=0)), int((want != got).sum()), want.size,
                          bool((exponent < 0).any())))
    return out


def _value(case: Case, known: dict[str, Any], name: str) -> Any:
    """A value on the case: ONNX Runtime's (or a feed), else the initializer or Constant the file holds."""
    got = known.get(name)
    return got if got is not None else static_value(case.model, name)


def _patch(case: Case, node: Any, dtype: Any, top: int, wrong: int, size: int, negative: bool = False) -> Patch:
    bits = max(MIN_BITS, int(max(top, 0)).bit_length() + 1)
    why = (f"ONNX Runtime's Pow kernel computes the {np.dtype(dtype).name} power {node.name} through double "
           f"(std::pow), exact only below 2**53: {wrong} of its {size} values differ from the exact integer power "
           "torch computes (repeated multiplication in the integer type); with the power computed by repeated "
           "squaring in the integer type the file computes what torch computes")
    fix = ("deploy the file with the power as repeated squaring (`drifttui repair` applies it), or keep the power "
           "below 2**53 in the model (reduce modulo at each multiplication); report the kernel's integer Pow to "
           f"onnxruntime with `drifttui repro` (its family: {UPSTREAM})")
    spec = {"op": "rewrite", "rewrite": "int_pow_exact", "node": node.name, "bits": bits, "dtype": np.dtype(dtype).name,
            **({"negative": True} if negative else {})}
    return Patch(spec, "dtype", why, fix, "runtime", module=case.module, nodes=[node.name])
