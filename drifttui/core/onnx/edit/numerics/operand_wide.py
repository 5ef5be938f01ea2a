"""Graph edit: one elementwise node computed in a wider float type with one operand's values restored there (the
counterfactual of ``causes/propose/numerics/wide_operand.py``).

``spec``: ``node``, ``input`` (the operand's position), ``name`` (the constant it reads there), ``values`` (the
operand's values, flat, row-major), ``shape`` (the constant's dims), ``wide`` (the ONNX element type to compute in,
float64 or float32), ``narrow`` (the file's type there).  The node's other float inputs are Cast to ``wide`` before it, the operand becomes a fresh
initializer of the node alone (a constant shared with other nodes keeps its value there), and the node's result is
computed under a new name and Cast back to its own type under its own name, so every reader sees the type it saw.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import input_dtype, splice_sorted

SUFFIX = "/drifttui_wide"
ELEMENTWISE = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod")


def apply_operand_wide(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = next((n for n in model.graph.node if n.name == spec["node"]), None)
    if node is None or node.op_type not in ELEMENTWISE:
        raise ValueError(f"no elementwise node named {spec['node']!r}")
    pos, wide = int(spec["input"]), int(spec["wide"])
    if pos >= len(node.input) or node.input[pos] != spec["name"]:
        raise ValueError(f"{node.name} does not read {spec['name']!r} as input {pos}")
    narrow = int(spec.get("narrow") or helper.np_dtype_to_tensor_dtype(np.dtype(input_dtype(model, spec["name"]))))
    values = np.asarray(spec["values"], dtype=helper.tensor_dtype_to_np_dtype(wide)).reshape(tuple(spec["shape"]))
    fresh = numpy_helper.from_array(values, f"{spec['name']}{SUFFIX}_{node.name}")
    new: list[Any] = []
    for k, v in enumerate(node.input):
        if k == pos or not v:
            continue
        if node.op_type == "Pow" and helper.np_dtype_to_tensor_dtype(np.dtype(input_dtype(model, v))) != narrow:
            continue                       # an exponent of another type keeps it (the other ops share one type)
        new.append(helper.make_node("Cast", [v], [f"{v}{SUFFIX}_{node.name}_{k}"], name=f"{node.name}{SUFFIX}/in{k}",
                                    to=wide))
        node.input[k] = new[-1].output[0]
    node.input[pos] = fresh.name
    out = node.output[0]
    node.output[0] = out + SUFFIX
    new.append(helper.make_node("Cast", [node.output[0]], [out], name=f"{node.name}{SUFFIX}/out", to=narrow))
    splice_sorted(model, new, [fresh], anchor=node)
    keep = [vi for vi in model.graph.value_info if vi.name != out]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)


APPLY = {"operand_wide": apply_operand_wide}
