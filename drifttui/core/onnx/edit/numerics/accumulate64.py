"""Graph edit: float32 reductions computed in float64 (the accumulation counterfactual of
``causes/propose/numerics/accumulate64.py``).

ONNX Runtime's CPU reduction kernels add the float32 elements of a long reduction in a running float32 sum;
torch's add them in a cascade of partial sums, which loses far less (microsoft/onnxruntime#28450: "a float64
reduction path, cast back to float32, matches PyTorch").  ``accumulate_float64`` makes each named node compute
in float64, keeping its name and its output's name: ``Cast(x, double) -> node -> Cast(y, float)``.  The ops
ONNX Runtime has no double kernel for are written as the equivalent one it has: ``GlobalAveragePool`` as a
``ReduceMean`` over the spatial axes (``spec["ranks"][node]``: its input's rank).  A ``CumSum`` (a scan) is
widened the same way: its axis input stays as it is.  A ``DFT`` / ``STFT`` (a sum over the transform's length per
output, with twiddle factors ONNX Runtime computes in float32) is widened with every float32 input it reads (an
STFT's window too); its lengths and axes stay as they are.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, splice_sorted

# the float32 sums ONNX Runtime accumulates in a running float32 (ops with a double kernel, and GAP)
SCANS = ("CumSum",)        # a running sum along an axis (torch's CPU cumsum accumulates float32 in double)
TRANSFORMS = ("DFT", "STFT")    # each output a sum over the transform's length, float32 twiddles in ONNX Runtime
SUMS = ("ReduceSum", "ReduceMean", "ReduceLogSumExp", "ReduceL2", "ReduceL1", "ReduceSumSquare", "ReduceLogSum",
        "GlobalAveragePool", *SCANS, *TRANSFORMS)
AXES_AS_INPUT = 18          # ReduceMean reads its axes as an input from opset 18


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 18)


def apply_accumulate_float64(model: Any, spec: dict[str, Any]) -> None:
    ranks = spec.get("ranks") or {}
    for name in spec.get("nodes") or [spec["node"]]:
        _widen(model, name, ranks.get(name))


def _widen(model: Any, name: str, rank: Any) -> None:
    from onnx import TensorProto, helper, numpy_helper

    node = find_node(model, name)
    if node.op_type not in SUMS:
        raise ValueError(f"{node.name} is a {node.op_type}, not a float32 sum")
    if np.dtype(input_dtype(model, node.input[0])) != np.float32:
        raise ValueError(f"{node.name}'s input is not float32")
    p = f"{node.name or node.output[0]}/drifttui_f64"
    x, out = node.input[0], node.output[0]
    new = [helper.make_node("Cast", [x], [f"{p}/x"], name=f"{p}/in", to=TensorProto.DOUBLE)]
    if node.op_type in TRANSFORMS:     # an STFT's window is a float input of the signal's type
        for k in range(1, len(node.input)):
            v = node.input[k]
            if v and np.dtype(input_dtype(model, v)) == np.float32:
                new.append(helper.make_node("Cast", [v], [f"{p}/in{k}"], name=f"{p}/in{k}", to=TensorProto.DOUBLE))
                node.input[k] = f"{p}/in{k}"
    inits: list[Any] = []
    if node.op_type == "GlobalAveragePool":
        if rank is None or int(rank) < 3:
            raise ValueError(f"{node.name}: the rank of its input is unknown")
        axes = list(range(2, int(rank)))
        if _opset(model) >= AXES_AS_INPUT:
            inits.append(numpy_helper.from_array(np.asarray(axes, np.int64), f"{p}/axes"))
            mean = helper.make_node("ReduceMean", [f"{p}/x", f"{p}/axes"], [f"{p}/y"], name=f"{p}/mean", keepdims=1)
        else:
            mean = helper.make_node("ReduceMean", [f"{p}/x"], [f"{p}/y"], name=f"{p}/mean", axes=axes, keepdims=1)
        drop = [node]
        new.append(mean)
    else:
        node.input[0] = f"{p}/x"
        node.output[0] = f"{p}/y"
        drop = []
    new.append(helper.make_node("Cast", [f"{p}/y"], [out], name=f"{p}/out", to=TensorProto.FLOAT))
    splice_sorted(model, new, inits, anchor=node, drop=drop)
    for vi in model.graph.value_info:           # the node's output keeps float32; nothing else is retyped
        if vi.name == out:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT


APPLY = {"accumulate_float64": apply_accumulate_float64}
