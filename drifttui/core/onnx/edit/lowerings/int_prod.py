"""Graph edit: an integer ``ReduceProd`` computed as a tree of ``Mul`` (``causes/propose/edits/int_prod.py``).

torch's integer ``prod`` multiplies in the integer type and wraps on overflow (two's complement, as numpy's and
the ONNX reference implementation's products do); ONNX Runtime's CPU ``ReduceProd`` kernel saturates an int64
product at the type's bounds (a product of 32 integers of a few hundred each reads 9223372036854775807 where
torch's is 6154129427165872128), while its ``Mul`` wraps.  A product modulo 2**64 does not depend on the order of
its factors, so ``int_prod_exact`` multiplies the halves of each reduced axis pairwise until one element is left
(an odd element carried to the next level), and squeezes the axes when the node does not keep them::

    v = x; n = size(axis)
    while n > 1: v = Concat(Mul(v[:h], v[h:2h]), v[2h:n]) along axis  (h = n // 2)

Spec: ``axes`` (non-negative) with their ``sizes`` on the case (static: the file reduces those sizes),
``keepdims``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def apply_int_prod_exact(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "ReduceProd")
    axes, sizes = [int(a) for a in spec["axes"]], [int(s) for s in spec["sizes"]]
    if _opset(model) < 13 or len(axes) != len(sizes) or not axes or min(sizes) < 1:
        raise ValueError(f"{node.name}: no static non-empty axes to multiply along at opset 13 or later")
    p = f"{node.name}/drifttui_iprod"
    inits: dict[str, Any] = {}

    def const(*values: int) -> str:
        name = f"{p}/c" + "_".join(str(v) for v in values)
        inits.setdefault(name, numpy_helper.from_array(np.asarray(values, np.int64), name))
        return name

    new: list[Any] = []
    v = node.input[0]
    for axis, n in zip(axes, sizes):
        level = 0
        while n > 1:
            h, q = n // 2, f"{p}/a{axis}l{level}"
            new += [helper.make_node("Slice", [v, const(0), const(h), const(axis)], [f"{q}/lo"], name=f"{q}/lo"),
                    helper.make_node("Slice", [v, const(h), const(2 * h), const(axis)], [f"{q}/hi"], name=f"{q}/hi"),
                    helper.make_node("Mul", [f"{q}/lo", f"{q}/hi"], [f"{q}/mul"], name=f"{q}/mul")]
            out = f"{q}/mul"
            if n % 2:
                new += [helper.make_node("Slice", [v, const(2 * h), const(n), const(axis)], [f"{q}/odd"],
                                         name=f"{q}/odd"),
                        helper.make_node("Concat", [out, f"{q}/odd"], [f"{q}/cat"], name=f"{q}/cat", axis=axis)]
                out = f"{q}/cat"
            v, n, level = out, h + n % 2, level + 1
    if int(spec.get("keepdims", 1)):
        new.append(helper.make_node("Identity", [v], [node.output[0]], name=f"{p}/out"))
    else:
        new.append(helper.make_node("Squeeze", [v, const(*sorted(axes))], [node.output[0]], name=f"{p}/out"))
    splice_sorted(model, new, list(inits.values()), anchor=node, drop=[node])


APPLY = {"int_prod_exact": apply_int_prod_exact}
