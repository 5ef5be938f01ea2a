"""Graph edit: a size the export baked into a scalar constant, computed from the runtime shape instead
(``causes/propose/candidates.baked_shapes``).

A trace turns ``float(x.shape[1]) ** -0.5`` or ``/ int(x.shape[1])`` into a constant of the example's size; a
file declared with a dynamic length then computes every other length with it.  ``runtime_size`` replaces that
node's input by the size of ``spec["input"]``'s dim ``spec["axis"]`` at run time, in the form the constant held::

    d = Cast(Shape(input, start=axis, end=axis + 1), double)      # the size, as torch's Python number
    {"d": d, "1/d": 1 / d, "d**-0.5": Pow(d, -0.5), "d**0.5": Sqrt(d)}[form] -> Cast to the constant's type, reshaped to its shape

Only the named node's input changes (a constant shared with other nodes keeps its value there).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import splice_sorted
from drifttui.core.onnx.weights import read_tensor

FORMS = ("d", "1/d", "d**-0.5", "d**0.5")


def _constant(model: Any, name: str) -> np.ndarray:
    for t in model.graph.initializer:
        if t.name == name:
            return read_tensor(t)
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output and n.output[0] == name:
            for a in n.attribute:
                if a.name == "value":
                    return read_tensor(a.t)
    raise ValueError(f"no scalar constant named {name!r}")


def apply_runtime_size(model: Any, spec: dict[str, Any]) -> None:
    from onnx import TensorProto, helper, numpy_helper

    node = next((n for n in model.graph.node if n.name == spec["node"]), None)
    if node is None or spec["name"] not in node.input:
        raise ValueError(f"no node {spec['node']!r} reading {spec['name']!r}")
    arr = _constant(model, spec["name"])
    form = spec.get("form", "d")
    if arr.size != 1 or form not in FORMS:
        raise ValueError(f"{spec['name']} is not one size (form {form!r})")
    p = f"{node.name}/drifttui_size"
    new = [helper.make_node("Shape", [spec["input"]], [f"{p}/shape"], name=f"{p}/shape",
                            start=int(spec["axis"]), end=int(spec["axis"]) + 1),
           helper.make_node("Cast", [f"{p}/shape"], [f"{p}/d"], name=f"{p}/d", to=TensorProto.DOUBLE)]
    value = f"{p}/d"
    if form == "1/d":
        new.append(helper.make_node("Reciprocal", [value], [f"{p}/inv"], name=f"{p}/inv"))
        value = f"{p}/inv"
    elif form == "d**-0.5":
        new.append(helper.make_node("Pow", [value, f"{p}/half"], [f"{p}/rsqrt"], name=f"{p}/rsqrt"))
        value = f"{p}/rsqrt"
    elif form == "d**0.5":
        new.append(helper.make_node("Sqrt", [value], [f"{p}/sqrt"], name=f"{p}/sqrt"))
        value = f"{p}/sqrt"
    new += [helper.make_node("Cast", [value], [f"{p}/typed"], name=f"{p}/typed",
                             to=helper.np_dtype_to_tensor_dtype(arr.dtype)),
            helper.make_node("Reshape", [f"{p}/typed", f"{p}/to"], [f"{p}/value"], name=f"{p}/value")]
    inits = [numpy_helper.from_array(np.asarray(-0.5, np.float64), f"{p}/half"),
             numpy_helper.from_array(np.asarray(arr.shape, np.int64), f"{p}/to")]
    for k, v in enumerate(node.input):
        if v == spec["name"]:
            node.input[k] = f"{p}/value"
    splice_sorted(model, new, inits, anchor=node)


APPLY = {"runtime_size": apply_runtime_size}
