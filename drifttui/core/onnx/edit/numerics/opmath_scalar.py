"""Graph edit: one float16 / bfloat16 arithmetic node computed in float32 with torch's Python scalar (the
counterfactual of ``causes/propose/numerics/opmath_scalar.py``).

torch's CPU binary kernels hold a wrapped Python number in their opmath type (float32 for float16 and bfloat16)
and round only the result; an exporter writes the number as a constant of the tensor's low type, where it can be
inf (86400 in float16), 0 or another number.  ``opmath_scalar`` rewrites ``spec["node"]`` (a ``Mul``, ``Div``,
``Add`` or ``Sub``): its input ``spec["input"]`` becomes a float32 initializer holding ``spec["value"]``, its
other inputs are Cast to float32, and its result is Cast back to its low type under its own name::

    y = Div(t, inf_f16)   ->   y = Cast(Div(Cast(t, float), 86400.0f), float16)

A comparison that reads the result (``Less(y, kth)``, a top-k cut) reads it through explicit Casts to float32 (the
same numbers: a float16 comparison is the comparison of their float32 images): ONNX Runtime's CPU runs a float16
comparison through float32 Casts it inserts and merges the rounding Cast into them, so the comparison would read
the unrounded result (microsoft/onnxruntime#8787's dropped rounding).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted

FLOAT = 1
LOW = (10, 16)              # float16, bfloat16
ARITH = ("Mul", "Div", "Add", "Sub")
COMPARE = ("Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal")


def apply_opmath_scalar(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "|".join(ARITH))
    pos, low = int(spec["input"]), int(spec["low"])
    if low not in LOW or pos >= len(node.input):
        raise ValueError(f"{node.name} has no input {pos} of a low-precision type")
    base = f"{node.name}/drifttui_opmath"
    scalar = numpy_helper.from_array(np.asarray(spec["value"], np.float32), f"{base}/scalar")
    new: list[Any] = []
    for i, v in enumerate(node.input):
        if i == pos:
            node.input[i] = scalar.name
        else:
            new.append(helper.make_node("Cast", [v], [f"{base}/in{i}"], name=f"{base}/in{i}", to=FLOAT))
            node.input[i] = f"{base}/in{i}"
    out = node.output[0]
    node.output[0] = f"{base}/f32"
    new.append(helper.make_node("Cast", [node.output[0]], [out], name=f"{base}/back", to=low))
    splice_sorted(model, new, [scalar], anchor=node)
    for reader in [n for n in model.graph.node if n.op_type in COMPARE and out in n.input]:
        _compared_wide(model, reader)


def _compared_wide(model: Any, reader: Any) -> None:
    """``reader`` (a comparison of low-precision values) reads each input through an explicit Cast to float32."""
    from onnx import helper

    wide = []
    for i, v in enumerate(reader.input):
        if v.endswith("/drifttui_wide"):
            continue
        wide.append(helper.make_node("Cast", [v], [f"{reader.name}/in{i}/drifttui_wide"],
                                     name=f"{reader.name}/in{i}/drifttui_wide", to=FLOAT))
        reader.input[i] = wide[-1].output[0]
    if wide:
        splice_sorted(model, wide, anchor=reader)


APPLY = {"opmath_scalar": apply_opmath_scalar}
