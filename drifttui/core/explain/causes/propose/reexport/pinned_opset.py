"""What a pinned opset changes in a lowering, told when the same exporter one opset up verifies (issue 30 point 3).

A file exported at ``opset_version=11`` (TensorRT, an older runtime) goes through the older opsets' symbolic
functions: where the opset lacks an op for a type, the TorchScript exporter casts integer operands to float and
computes the op there (``Max`` / ``Min`` / ``Clip`` of int64 below opset 12 inside ``Cast(float) .. Cast(int64)``,
``Pow`` of an integer base in float with no Cast back), and float32 holds integers exactly only to 2**24.  When the
re-export at the next opset computes what torch computes, the story names those ops, read from the two graphs:
the file's ops fed by a float Cast of an integer value that the re-export computes without one.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.base.dtypes import INT_ELEMS

_FLOAT = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}


def _casts_of_ints(model: Any) -> dict[str, int]:
    """value -> the float type of each Cast of an integer value to a float in ``model`` (its types inferred)."""
    import onnx

    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - the types the file declares, then
        pass
    types = {v.name: v.type.tensor_type.elem_type for v in
             list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output)}
    out = {}
    for n in model.graph.node:
        to = next((a.i for a in n.attribute if a.name == "to"), None) if n.op_type == "Cast" else None
        if to in _FLOAT and n.input and types.get(n.input[0]) in INT_ELEMS:
            out[n.output[0]] = to
    return out


def through_float(origin: Any, witness: Any) -> list[tuple[str, str]]:
    """(op type, float type) of the origin's ops that read a float Cast of an integer value, of a kind the witness
    (the re-export that computes right) computes with no such Cast: the integer ops the pinned opset computes in
    float."""
    mine, theirs = _casts_of_ints(origin), _casts_of_ints(witness)
    kept = {n.op_type for n in witness.graph.node if any(i in theirs for i in n.input)}
    out: list[tuple[str, str]] = []
    for n in origin.graph.node:
        fed = [mine[i] for i in n.input if i in mine]
        if fed and n.op_type not in kept and n.op_type != "Cast" and (n.op_type, _FLOAT[fed[0]]) not in out:
            out.append((n.op_type, _FLOAT[fed[0]]))
    return out


def pinned_story(origin: Any, witness: Any, file_opset: int, opset: int, exporter: str) -> str:
    """One clause on what the file's opset changes, "" when the two graphs show no integer op computed in float."""
    ops = through_float(origin, witness)
    if not ops:
        return ""
    said = ", ".join(f"{op} in {ft}" for op, ft in ops)
    bits = {"float32": 24, "float64": 53, "float16": 11, "bfloat16": 8}[ops[0][1]]
    return (f"at opset {file_opset} the {exporter} exporter computes integer values through a float Cast ({said}: "
            f"the opset has no integer form of the first, {ops[0][1]} holds integers exactly only to 2**{bits}), at "
            f"opset {opset} in the integer type; ")
