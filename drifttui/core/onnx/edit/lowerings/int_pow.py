"""Graph edit: an integer ``Pow`` computed exactly, by repeated squaring (``causes/propose/edits/int_pow.py``).

ONNX Runtime's CPU ``Pow`` computes an int32/int64 power through double ``std::pow``: exact only while the
power fits in double's 53-bit mantissa; torch (and numpy) multiply integers, ``result *= base`` for each set
bit of the exponent with ``base *= base`` between, wrapping on overflow.  ``int_pow_exact`` writes that loop
unrolled over ``spec["bits"]`` bits of the exponent, keeping the node's output name::

    r0 = 1; b0 = base; e0 = exponent
    r(i+1) = r(i) * Where(Mod(e(i), 2) == 1, b(i), 1); b(i+1) = b(i) * b(i); e(i+1) = e(i) / 2

(``Div`` of a non-negative integer truncates, as torch's ``b /= 2`` does; torch refuses a negative integer
exponent, so none reaches the file).
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
    r, b, e = f"{p}/one", base, f"{p}/e0"
    for i in range(bits):
        q = f"{p}/{i}"
        new += [helper.make_node("Mod", [e, f"{p}/two"], [f"{q}/bit"], name=f"{q}/bit"),
                helper.make_node("Equal", [f"{q}/bit", f"{p}/one"], [f"{q}/set"], name=f"{q}/set"),
                helper.make_node("Where", [f"{q}/set", b, f"{p}/one"], [f"{q}/factor"], name=f"{q}/factor"),
                helper.make_node("Mul", [r, f"{q}/factor"], [out if i == bits - 1 else f"{q}/r"], name=f"{q}/r")]
        if i < bits - 1:
            new += [helper.make_node("Mul", [b, b], [f"{q}/b"], name=f"{q}/b"),
                    helper.make_node("Div", [e, f"{p}/two"], [f"{q}/e"], name=f"{q}/e")]
        r, b, e = f"{q}/r", f"{q}/b", f"{q}/e"
    splice_sorted(model, new, inits, anchor=node, drop=[node])


APPLY = {"int_pow_exact": apply_int_pow_exact}
