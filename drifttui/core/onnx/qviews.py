"""Quantized activations of a QOperator file, read as the float values they stand for.

In onnxruntime.quantization's QOperator format (QLinearConv, QLinearMatMul, QLinearAdd, QGemm...)
the values between the quantized ops are uint8 / int8: a module's output exists only as integers
with a scale and a zero point.  Compared raw they would mean nothing (and a reference-export
mapping leaves them ``fused``), so each such value is read through a ``DequantizeLinear`` view
with the scale and zero point its readers use, and turned back for its readers by a
``QuantizeLinear`` with the same ones (an exact round trip on the integers).  As for every view
(prepare/reference.py), the mapped value is the view: the local run cuts there and feeds the
PyTorch value to the readers through the way back, i.e. rounded at the file's own scale, as the
file rounds it.
"""
from __future__ import annotations

from typing import Any, Optional

INT_TYPES = (2, 3)        # uint8, int8
QOPERATOR = ("QLinear", "QGemm")      # QOperator ops: their outputs are quantized activations
FLOAT = 1


# ops that move a quantized tensor's integers without computing with them: what they output is read
# with the scale and zero point of their input (onnxruntime.quantization puts no DequantizeLinear
# before them: a QLinearMul's output goes through GPT-2's Reshape to the next QGemm as integers)
MOVES = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Slice", "Split", "Gather",
         "Expand", "Tile", "MaxPool", "DepthToSpace", "SpaceToDepth"}
_MAX_MOVES = 8


def _scale_zero(index: Any, value: str, depth: int = 0) -> Optional[tuple[str, str]]:
    """The (scale, zero point) initializers a reader of ``value`` takes it with: every QOperator op
    and DequantizeLinear read a quantized tensor as (x, x_scale, x_zero_point), side by side; a
    value only moved on (Reshape, Transpose...: MOVES) is read with its reader's."""
    found = _read_with(index, value)
    if found is not None or depth >= _MAX_MOVES:
        return found
    for c in index.consumers.get(value, []):
        n = index.nodes[c]
        if n.op_type in MOVES and n.domain in ("", "ai.onnx") and n.inputs and n.inputs[0] == value:
            for o in n.outputs:
                found = _scale_zero(index, o, depth + 1) if o else None
                if found is not None:
                    return found
    return None


def _read_with(index: Any, value: str) -> Optional[tuple[str, str]]:
    """The (scale, zero point) a reader of ``value`` names next to it (a QOperator op, DequantizeLinear)."""
    for c in index.consumers.get(value, []):
        ins = index.nodes[c].inputs
        for pos, name in enumerate(ins):
            if name != value or pos + 2 >= len(ins):
                continue
            s, z = ins[pos + 1], ins[pos + 2]
            st, zt = index.constant_tensor(s), index.constant_tensor(z)
            if st is not None and st.data_type == FLOAT and len(st.dims) == 0 and zt is not None \
                    and zt.data_type in INT_TYPES and index.elem_types.get(value) in (zt.data_type, None, 0) \
                    and len(zt.dims) == 0:
                return s, z
    return None


def quantized_values(index: Any) -> dict[str, tuple[str, str]]:
    """Activations of a QOperator file (integer outputs of its QLinear* / QGemm nodes, read with a
    per-tensor scale and zero point) -> (scale, zero point); none in other files."""
    if not any(n.op_type.startswith(QOPERATOR) for n in index.nodes):
        return {}
    out: dict[str, tuple[str, str]] = {}
    for n in index.nodes:
        if not n.op_type.startswith(QOPERATOR):
            continue      # a QuantizeLinear's output is the rounded copy of a float value the file has
        for o in n.outputs:
            # a contrib op's output (QLinearAdd, QLinearMul...) has no inferred type: its readers' zero point says it
            if not o or index.elem_types.get(o) not in (*INT_TYPES, None, 0) or index.is_static(o):
                continue
            if all(index.nodes[c].op_type == "DequantizeLinear" for c in index.consumers.get(o, [])):
                continue        # its only readers dequantize it already: their outputs are the float values
            sz = _scale_zero(index, o)
            if sz is not None:
                out[o] = sz
    return out


def dequantize_views(index: Any) -> tuple[dict[str, list[Any]], dict[str, str], dict[str, str]]:
    """The views for every quantized activation: (nodes to put after each value, reader rewiring,
    view -> quantized value), for reference.insert_views."""
    import onnx

    after: dict[str, list[Any]] = {}
    made: dict[str, str] = {}
    found = quantized_values(index)
    for k, (v, (s, z)) in enumerate(sorted(found.items())):
        out = f"{v}::float"
        after[v] = [onnx.helper.make_node("DequantizeLinear", [v, s, z], [out], name=f"drifttui_deq_{k}"),
                    onnx.helper.make_node("QuantizeLinear", [out, s, z], [f"{v}::q"], name=f"drifttui_req_{k}")]
        made[out] = v
    return after, {v: f"{v}::q" for v in found}, made


def is_view_node(node: Any) -> bool:
    """A node these views added (not the user's: never listed for their converter)."""
    return node.name.startswith(("drifttui_deq_", "drifttui_req_"))


def strip_views(nodes: list[Any]) -> list[Any]:
    """The user's graph back from a patched copy (in place): readers of a view's way back read the
    quantized value again; the view nodes are left unused (pruned by the caller)."""
    made = {o for n in nodes for o in n.output}
    back: dict[str, str] = {}
    for n in nodes:        # a way back reads "<v>::float" (the view, or a kept producer's float value)
        if n.name.startswith("drifttui_req_") and n.input and n.input[0].endswith("::float"):
            v = n.input[0][: -len("::float")]
            if v in made:
                back[n.output[0]] = v
    for n in nodes:
        for pos, name in enumerate(n.input):
            if name in back:
                n.input[pos] = back[name]
    return nodes


# reference.py's views of a processed file's values (a Reshape to the reference's shape, a Transpose to
# its axis order, ReorderOutput from NCHWc) and their ways back to the readers: forward name -> back name
# (and onnx/edit/absorbed_views.py's, named after their scope path: matched on the name's last segment)
_ROUND_TRIPS = {"drifttui_view_": "drifttui_back_", "drifttui_perm_": "drifttui_unperm_",
                "drifttui_nchw_": "drifttui_nchwc_", "drifttui_absorbed_": "drifttui_unabsorbed_"}


KEPT = "::kept"     # absorbed_views.py: a viewed model output's value as its producer wrote it


def _unkeep(made: dict[str, Any], way_back: Any) -> None:
    """absorbed_views.py's view of a model output: the producer writes the output again, the view is unused."""
    name = way_back.output[0]
    producer = made[f"{name}{KEPT}"]
    producer.output[list(producer.output).index(f"{name}{KEPT}")] = name
    way_back.output[0] = f"{name}::unused"


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def strip_round_trips(nodes: list[Any]) -> list[Any]:
    """The user's graph back from a patched copy (in place): readers of a view's way back (a Reshape
    back, the inverse Transpose, ReorderInput) read the value the view was taken of again; the view
    nodes are left unused (pruned by the caller).  Else a copy checked again gets a second set of
    views with the same names (ORT: "two nodes with same node name")."""
    made = {o: n for n in nodes for o in n.output}
    back: dict[str, str] = {}
    for n in nodes:
        if not n.input or not _base(n.name).startswith(tuple(_ROUND_TRIPS.values())):
            continue
        fwd = made.get(n.input[0])
        kind = next((k for k in _ROUND_TRIPS if fwd is not None and _base(fwd.name).startswith(k)), None)
        if kind is not None and fwd.input and _base(n.name).startswith(_ROUND_TRIPS[kind]):
            if fwd.input[0] == f"{n.output[0]}{KEPT}":      # a model output's way back: its producer's again
                _unkeep(made, n)
                continue
            back[n.output[0]] = fwd.input[0]
    for n in nodes:
        for pos, name in enumerate(n.input):
            if name in back:
                n.input[pos] = back[name]
    return nodes
