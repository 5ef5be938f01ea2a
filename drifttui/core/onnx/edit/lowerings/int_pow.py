"""Graph edit: an integer ``Pow`` computed exactly, by repeated squaring (``causes/propose/edits/int_pow.py``).

ONNX Runtime's CPU ``Pow`` computes an int32/int64 power through double ``std::pow``: exact only while the
power fits in double's 53-bit mantissa; torch (and numpy) multiply integers, ``result *= base`` for each set
bit of the exponent with ``base *= base`` between, wrapping on overflow.  ``int_pow_exact`` writes that loop
unrolled over ``spec["bits"]`` bits of the exponent, keeping the node's output name::

    r0 = 1; b0 = base; e0 = exponent
    r(i+1) = r(i) * Where(Mod(e(i), 2) == 1, b(i), 1); b(i+1) = b(i) * b(i); e(i+1) = e(i) / 2

(``Div`` of a non-negative integer truncates, as torch's ``b /= 2`` does).  A negative exponent of a tensor (torch
refuses only a Python number's) is torch's ``powi``: 1 for a base of 1, -1 or 1 by the exponent's parity for -1, else
0; with ``spec["negative"]`` the loop's result is replaced there by that ``Where``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, splice_sorted

INT_TYPES = (np.int32, np.int64)


def apply_int_pow_exact(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "Pow")
    dtype = np.dtype(spec.get("dtype") or input_dtype(model, node.input[0]))
    if dtype not in [np.dtype(t) for t in INT_TYPES]:
        raise ValueError(f"{node.name}'s base is not an int32/int64 tensor")
    bits = int(spec.get("bits", 6))
    p = f"{node.name}/drifttui_ipow"
    base, exponent, out = node.input[0], node.input[1], node.output[0]
    inits = [numpy_helper.from_array(np.asarray(v, dtype), f"{p}/{k}") for k, v in (("one", 1), ("two", 2))]
    new = [helper.make_node("Cast", [exponent], [f"{p}/e0"], name=f"{p}/e0",
                            to=helper.np_dtype_to_tensor_dtype(dtype))]
    negative = bool(spec.get("negative"))
    if negative:
        inits += [numpy_helper.from_array(np.asarray(v, dtype), f"{p}/{k}") for k, v in (("zero", 0), ("minus", -1))]
    r, b, e = f"{p}/one", base, f"{p}/e0"
    last = f"{p}/positive" if negative else out
    for i in range(bits):
        q = f"{p}/{i}"
        new += [helper.make_node("Mod", [e, f"{p}/two"], [f"{q}/bit"], name=f"{q}/bit"),
                helper.make_node("Equal", [f"{q}/bit", f"{p}/one"], [f"{q}/set"], name=f"{q}/set"),
                helper.make_node("Where", [f"{q}/set", b, f"{p}/one"], [f"{q}/factor"], name=f"{q}/factor"),
                helper.make_node("Mul", [r, f"{q}/factor"], [last if i == bits - 1 else f"{q}/r"], name=f"{q}/r")]
        if i < bits - 1:
            new += [helper.make_node("Mul", [b, b], [f"{q}/b"], name=f"{q}/b"),
                    helper.make_node("Div", [e, f"{p}/two"], [f"{q}/e"], name=f"{q}/e")]
        r, b, e = f"{q}/r", f"{q}/b", f"{q}/e"
    if negative:
        new += _below_zero(helper, p, base, f"{p}/e0", last, out)
    splice_sorted(model, new, inits, anchor=node, drop=[node])


def _below_zero(helper: Any, p: str, base: str, e: str, positive: str, out: str) -> list[Any]:
    """``out = Where(e < 0, torch's powi of a negative exponent, positive)`` (``Mod`` of an integer takes the
    divisor's sign: -3 mod 2 is 1, odd)."""
    def node(op: str, ins: list[str], name: str) -> Any:
        return helper.make_node(op, ins, [out if name == "out" else f"{p}/{name}"], name=f"{p}/{name}")

    return [node("Less", [e, f"{p}/zero"], "neg"), node("Equal", [base, f"{p}/one"], "is_one"),
            node("Equal", [base, f"{p}/minus"], "is_minus"), node("Mod", [e, f"{p}/two"], "parity"),
            node("Equal", [f"{p}/parity", f"{p}/one"], "odd"),
            node("Where", [f"{p}/odd", f"{p}/minus", f"{p}/one"], "of_minus"),
            node("Where", [f"{p}/is_minus", f"{p}/of_minus", f"{p}/zero"], "else_one"),
            node("Where", [f"{p}/is_one", f"{p}/one", f"{p}/else_one"], "below"),
            node("Where", [f"{p}/neg", f"{p}/below", positive], "out")]


APPLY = {"int_pow_exact": apply_int_pow_exact}
