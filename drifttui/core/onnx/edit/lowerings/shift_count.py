"""Graph edit: a left shift written as a product by ``Cast(2 ** b)``, its factor 0 where the count reaches the
type's width (``causes/propose/edits/shift_count.py``).

torch's ``a << b`` on integers is 0 for a count at or past the type's width (and for a negative one).  The
TorchScript exporter writes it ``a * Cast(Pow(2.0, Cast(b, float)), int)``: below the width the power is exact and
the product wraps as torch's shift does, a negative count's power is a fraction the Cast truncates to 0, but at the
width or past it ``2 ** b`` is past the integer type's range and its Cast gives the CPU's "integer indefinite"
(INT64_MIN on x86), so the product is ``a * INT64_MIN`` where torch's is 0.  ``shift_count`` makes the factor 0
there: ``Where(double(b) > width - 1, 0, Cast(...))`` (the count is integer-valued: ``> width - 1`` is ``>= width``).
Spec: ``node`` (the integer Cast of the power), ``bits`` (the width of its type).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted, static_value


def power_of_two(model: Any, cast: Any) -> Optional[Any]:
    """The ``Pow(2, b)`` an integer ``Cast`` reads (None when it reads something else)."""
    pow_ = next((n for n in model.graph.node if n.op_type == "Pow" and cast.input[0] in n.output), None)
    if pow_ is None:
        return None
    base = static_value(model, pow_.input[0])
    return pow_ if base is not None and base.size == 1 and float(base.ravel()[0]) == 2.0 else None


def apply_shift_count(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "Cast")
    pow_ = power_of_two(model, node)
    if pow_ is None:
        raise ValueError(f"Cast {node.name!r} does not read a power of two")
    to = helper.tensor_dtype_to_np_dtype(next(a.i for a in node.attribute if a.name == "to"))
    p, out = f"{node.name}/drifttui_count", node.output[0]
    inits = [numpy_helper.from_array(np.asarray(int(spec["bits"]) - 1, np.float64), f"{p}/last"),
             numpy_helper.from_array(np.asarray(0, to), f"{p}/zero")]
    node.output[0] = f"{p}/factor"
    new = [helper.make_node("Cast", [pow_.input[1]], [f"{p}/count"], name=f"{p}/count", to=11),   # any type: double
           helper.make_node("Greater", [f"{p}/count", f"{p}/last"], [f"{p}/past"], name=f"{p}/past"),
           helper.make_node("Where", [f"{p}/past", f"{p}/zero", f"{p}/factor"], [out], name=f"{p}/where")]
    splice_sorted(model, new, inits, anchor=node)


APPLY = {"shift_count": apply_shift_count}
