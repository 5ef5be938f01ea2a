"""Graph edit: a region of nodes computed in float64 (the amplification counterfactual of
``causes/propose/numerics/origin64.py``).

Every float32 value the region reads from outside (``spec["inputs"]``: graph inputs, initializers, other nodes'
outputs) is Cast to double before it; inside, a ``Cast`` to float32 casts to double and a float32 ``Constant`` /
``ConstantOfShape`` holds double; every float32 value the region computes (``spec["outputs"]``) is computed in
double under a new name and Cast back to float32 under its own name, so whatever reads it outside, and the graph's
outputs, see float32 as before.  Values that are not float32 (shapes, indices, masks) are left as they are.
A node of a type in ``spec["expand"]`` (no double kernel in ONNX Runtime) is first replaced by its ONNX definition
(``function_body.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.numerics.function_body import expand_region
from drifttui.core.onnx.edit.rewriting import splice_sorted
from drifttui.core.onnx.weights import read_tensor

SUFFIX = "/drifttui_f64"
FIXED = {"Resize": (1, 2), "Upsample": (1,)}      # inputs of a type of their own (roi, scales): kept float32


def _widen_attr(node: Any) -> None:
    from onnx import TensorProto, numpy_helper

    for a in node.attribute:
        if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
            a.i = TensorProto.DOUBLE
        elif a.HasField("t") and a.t.data_type == TensorProto.FLOAT:
            a.t.CopyFrom(numpy_helper.from_array(read_tensor(a.t).astype(np.float64), a.t.name))


def apply_origin_float64(model: Any, spec: dict[str, Any]) -> None:
    from onnx import TensorProto, helper

    names = set(spec["nodes"])
    if len([n for n in model.graph.node if n.name in names]) != len(names):
        raise ValueError("the region's nodes are not all in the graph")
    # an op ONNX Runtime has no double kernel for, computed by its ONNX definition (function_body.py)
    names = expand_region(model, names, set(spec.get("expand") or []))
    region = [n for n in model.graph.node if n.name in names]
    inputs, outputs = set(spec.get("inputs") or []), set(spec.get("outputs") or [])
    widened = {v: v + SUFFIX for v in inputs | outputs}
    new: list[Any] = []
    for v in sorted(inputs):
        new.append(helper.make_node("Cast", [v], [widened[v]], name=f"{v}{SUFFIX}/in", to=TensorProto.DOUBLE))
    for n in region:
        _widen_attr(n)
        for k, v in enumerate(n.input):
            if v in widened and k not in FIXED.get(n.op_type, ()):
                n.input[k] = widened[v]
        for k, v in enumerate(n.output):
            if v in outputs:
                n.output[k] = widened[v]
    for v in sorted(outputs):
        new.append(helper.make_node("Cast", [widened[v]], [v], name=f"{v}{SUFFIX}/out", to=TensorProto.FLOAT))
    splice_sorted(model, new, anchor=region[0] if region else None)
    produced = {o for n in region for o in n.output}
    keep = [vi for vi in model.graph.value_info if vi.name not in produced]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)


# kernel_float64 (causes/propose/numerics/kernel64.py): a region of one node, the kernel ONNX Runtime computes otherwise
APPLY = {"origin_float64": apply_origin_float64, "kernel_float64": apply_origin_float64}
