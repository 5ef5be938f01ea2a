"""Graph edit: ``QuantizeLinear`` computed as torch quantises, by the float32 reciprocal of the scale.

ONNX ``QuantizeLinear`` is ``saturate(round(x / scale) + zero_point)``.  torch's quantising kernels (the
``fake_quantize_per_tensor_affine`` / ``per_channel`` of QAT and ``FakeQuantize`` modules, ``quantize_per_tensor``)
compute ``nearbyint(x * inv_scale) + zero_point`` with ``inv_scale = 1.0f / scale`` in float32.  The two quotients
differ in their last bit for some ``x``; where ``x / scale`` is a tie (a value half-way between two levels: the mean
of two quantised values, a value on a half-step grid) they round apart, one quantisation step.  With a scale whose
reciprocal is exact (a power of two) they never differ.

``quantize_reciprocal`` rewrites each named QuantizeLinear (float input, an int8 / uint8 zero point or none) as
``Cast(Clip(Round(x * Reciprocal(scale)) + zero_point, lo, hi))`` under its output name; ``layout`` gives, per
node, ``[rank of x, axis]`` (axis -1 for a per-tensor scale) so that a per-axis scale broadcasts along its axis.
ValueError when a node does not fit.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import scoped, splice_sorted

RANGES = {2: (0, 255, np.uint8), 3: (-128, 127, np.int8)}         # UINT8, INT8


def _zero_type(model: Any, node: Any) -> int:
    """The zero point's element type: an initializer's or a Constant's, through the Identity nodes TorchScript
    reads a shared zero point by (one buffer used by several fake-quantise calls)."""
    if len(node.input) < 3 or not node.input[2]:
        return 2
    name = node.input[2]
    while (ident := next((n for n in model.graph.node if n.op_type == "Identity" and name in n.output), None)):
        name = ident.input[0]
    init = next((t for t in model.graph.initializer if t.name == name), None)
    if init is not None:
        return int(init.data_type)
    const = next((n for n in model.graph.node if name in n.output and n.op_type == "Constant"), None)
    if const is not None and const.attribute and const.attribute[0].HasField("t"):
        return int(const.attribute[0].t.data_type)
    raise ValueError(f"{node.name}'s zero point has no known type")


def _rewrite(model: Any, node: Any, rank: int, axis: int) -> tuple[list[Any], list[Any]]:
    from onnx import helper, numpy_helper

    elem = _zero_type(model, node)
    if elem not in RANGES:
        raise ValueError(f"{node.name} quantises to a type other than int8 / uint8")
    lo, hi, _ = RANGES[elem]
    x, s = node.input[0], node.input[1]
    p = f"{node.name or node.output[0]}/drifttui_qrecip"

    def op(kind: str, ins: list[str], out: str, **kw: Any) -> Any:
        return helper.make_node(kind, ins, [f"{p}/{out}"], name=f"{p}/{out}", **kw)

    inits = [numpy_helper.from_array(np.asarray(lo, np.float32), f"{p}/lo"),
             numpy_helper.from_array(np.asarray(hi, np.float32), f"{p}/hi")]
    per_axis = 0 <= axis < rank - 1               # a per-axis scale [C] read as [C, 1, ..., 1]
    if per_axis:
        inits.append(numpy_helper.from_array(np.arange(1, rank - axis, dtype=np.int64), f"{p}/axes"))

    def along(value: str, name: str) -> str:
        if not per_axis:
            return value
        new.append(op("Unsqueeze", [value, f"{p}/axes"], name))
        return f"{p}/{name}"

    new = [op("Reciprocal", [s], "inv")]
    inv = along(f"{p}/inv", "inv_b")
    new += [op("Mul", [x, inv], "scaled"), op("Round", [f"{p}/scaled"], "rounded")]
    q = f"{p}/rounded"
    if len(node.input) > 2 and node.input[2]:
        new.append(op("Cast", [node.input[2]], "zero", to=1))
        new.append(op("Add", [q, along(f"{p}/zero", "zero_b")], "shifted"))
        q = f"{p}/shifted"
    new += [op("Clip", [q, f"{p}/lo", f"{p}/hi"], "clipped"),
            helper.make_node("Cast", [f"{p}/clipped"], [node.output[0]], name=f"{p}/cast", to=elem)]
    return scoped(node, new), inits


def apply_quantize_reciprocal(model: Any, spec: dict[str, Any]) -> None:
    layout = dict(spec.get("layout") or {})
    names = list(spec.get("nodes") or [spec["node"]])
    by_name = {n.name: n for n in model.graph.node}
    new, inits, gone = [], [], set()
    for name in names:
        node = by_name.get(name)
        if node is None or node.op_type != "QuantizeLinear" or name not in layout:
            raise ValueError(f"no QuantizeLinear named {name!r} with a known layout")
        if any(a.name in ("output_dtype", "block_size") and a.i for a in node.attribute):
            raise ValueError(f"{name} has an output type or block size the rewrite does not keep")
        made, more = _rewrite(model, node, *layout[name])
        new += made
        inits += more
        gone.add(name)
    splice_sorted(model, new, inits, drop=[n for n in model.graph.node if n.name in gone])


APPLY = {"quantize_reciprocal": apply_quantize_reciprocal}
