"""Patches: machine-readable edits of ONNX nodes, applied to a copy of a model.

``Patch.spec`` is plain JSON (it goes into ``Finding.patch``)::

    {"op": "set_attribute", "node": "n", "name": "coordinate_transformation_mode", "value": "half_pixel"}
    {"op": "set_attribute", "node": "n", "name": "training_mode", "value": 1, "outputs": 3}   # + unread outputs
    {"op": "replace_initializer", "name": "w", "source": "torch parameter conv.weight"}
    {"op": "remove_cast", "node": "n"}                       # the Cast becomes an Identity
    {"op": "replace_constant", "name": "v", "value": [...]}  # an initializer or Constant output
    {"op": "replace_constant", "name": "v", "node": "n", "input": 1, "value": 0.25}
                                  # that node's input only (constants.py: a functional constant)
    {"op": "rewrite", "node": "n", "rewrite": "floor_div"}   # integer Div -> floor division
    {"op": "rewrite", "node": "n", "rewrite": "resize_opset11", "mode": "half_pixel"}
    {"op": "rewrite", "node": "n", "rewrite": "clip_bounds", "max": 6.0, "dtype": "float32"}
                                  # only the bounds named change; None: unbounded
    {"op": "rewrite", "node": "n", "rewrite": "floor_cast"}  # and the others of rewrites.py
    {"op": "rewrite", "node": "n", "rewrite": "workaround", "form": "log_sigmoid"}  # workarounds.py
    {"op": "rewrite", "node": "n", "rewrite": "accumulate_float64", "nodes": [..]}   # accumulate64.py
    {"op": "rewrite", "node": "n", "rewrite": "opmath_float32", "form": "per_op", "nodes": [..], "low": {..},
     "inputs": {..}, "round": [..]}        # opmath.py: float16 nodes computed in float32, rounded where torch does
    {"op": "rewrite", "node": "n", "rewrite": "grid_nan_propagate"}                   # nan_grid.py
    {"op": "rewrite", "node": "n", "rewrite": "cast_first", "cast": "c", "to": 1, "narrow": 10, "inputs": [0]}
                                  # cast_first.py: the widening Cast c moved before the op n
    {"op": "rewrite", "node": "n", "rewrite": "operand_wide", "input": 1, "name": "c", "values": [..], "wide": 11}
    {"op": "rewrite", "node": "n", "rewrite": "origin_float64", "nodes": [..], "inputs": [..], "outputs": [..]}
                                  # origin64.py: the region computed in float64, its float32 values cast back
    {"op": "rewrite", "node": "n", "rewrite": "kernel_float64", "nodes": ["n"], "inputs": [..], "outputs": [..]}
                                  # origin64.py on one node: a kernel ONNX Runtime computes otherwise (kernel64.py)
    {"op": "rewrite", "node": "n", "rewrite": "int_pow_exact", "bits": 6, "dtype": "int64"}  # int_pow.py
    {"op": "rewrite", "node": "n", "rewrite": "int_wrap", "wide": "int64"}   # int_wrap.py: a narrowing Cast's wrap
    {"op": "rewrite", "node": "n", "rewrite": "resize_gather", "rule": "nearest", "in_shape": [..],
     "out_shape": [..], "scales": None}      # resize_gather.py: nearest Resize -> Gathers
    {"op": "rewrite", "node": "n", "rewrite": "resize_scales", "scales": [1, 1, .4, .4]}   # resize_map.py
    {"op": "rewrite", "node": "n", "rewrite": "resize_matmul", "rows": [[..]], "cols": [[..]]}  # torch's weights
    {"op": "rewrite", "node": "n", "rewrite": "runtime_size", "name": "c", "input": "x", "axis": 1,
     "form": "d**-0.5"}                      # runtime_size.py: a baked size computed from the runtime shape
    {"op": "sequence", "patches": [{..}, {..}]}   # residual.py: graph edits applied in order (two mechanisms)
    {"op": "reexport", "exporter": "torchscript", "opset": 18, "module": "m"}
                                  # applied by grafting Patch.graft (graft.py) into the file

Arrays too big for JSON (a replaced weight) travel in ``Patch.payload``; ``spec`` then says
where the values come from.  ``apply(model, patch)`` never edits its argument.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.onnx.edit.numerics.accumulate64 import APPLY as ACCUMULATE64
from drifttui.core.onnx.edit.numerics.cast_first import APPLY as CAST_FIRST
from drifttui.core.onnx.edit.numerics.operand_wide import APPLY as OPERAND_WIDE
from drifttui.core.onnx.edit.numerics.origin64 import APPLY as ORIGIN64
from drifttui.core.onnx.edit.numerics.half_recurrence import APPLY as HALF_RECURRENCE
from drifttui.core.onnx.edit.lowerings.crossed_clip import APPLY as CROSSED_CLIP
from drifttui.core.onnx.edit.lowerings.dropped_addend import APPLY as DROPPED_ADDEND
from drifttui.core.onnx.edit.lowerings.packed_padding import APPLY as PACKED_PADDING
from drifttui.core.onnx.edit.lowerings.int_pow import APPLY as INT_POW
from drifttui.core.onnx.edit.lowerings.int_wrap import APPLY as INT_WRAP
from drifttui.core.onnx.edit.numerics.opmath import APPLY as OPMATH
from drifttui.core.onnx.edit.numerics.opmath_scalar import APPLY as OPMATH_SCALAR
from drifttui.core.onnx.edit.lowerings.resize_gather import apply_resize_gather
from drifttui.core.onnx.edit.lowerings.resize_map import APPLY as RESIZE_MAP
from drifttui.core.onnx.edit.lowerings.runtime_size import APPLY as RUNTIME_SIZE
from drifttui.core.onnx.edit.rewriting import APPLY, input_dtype
from drifttui.core.onnx.edit.lowerings.mask_select import APPLY as MASK_SELECT
from drifttui.core.onnx.edit.lowerings.masked_positions import APPLY as MASKED
from drifttui.core.onnx.edit.lowerings.nan_grid import APPLY as NAN_GRID
from drifttui.core.onnx.edit.lowerings.nan_compare import APPLY as NAN_COMPARE
from drifttui.core.onnx.edit.lowerings.nan_select import APPLY as NAN_SELECT
from drifttui.core.onnx.edit.lowerings.quantize_torch import APPLY as QUANTIZE
from drifttui.core.onnx.edit.lowerings.remainder import APPLY as REMAINDER
from drifttui.core.onnx.edit.lowerings.singular import APPLY as SINGULAR
from drifttui.core.onnx.edit.lowerings.stable_forms import apply_expm1, apply_log1p, apply_logaddexp
from drifttui.core.onnx.edit.lowerings.ort_workarounds import apply_workaround
from drifttui.core.onnx.weights import ExternalTensorError, read_tensor, with_array

GRAPH_OPS = ("set_attribute", "replace_initializer", "remove_cast", "replace_constant", "rewrite", "sequence")


@dataclass
class Patch:
    spec: dict[str, Any]
    check: str                                  # drift class it would confirm
    why: str                                    # one line: what the patch says about the cause
    fix: str                                    # what the user should change
    kind: str = "export"                        # runtime | export | model: what a success means
    payload: Optional[np.ndarray] = None
    module: Optional[str] = None
    nodes: list[str] = field(default_factory=list)
    graft: Optional[Any] = None                 # reexport: the graft.Graft that repair applies
    siblings: list["Patch"] = field(default_factory=list)   # the same edit at the origin class's other calls
    torch_op: Optional[tuple[str, str]] = None  # (the forward's call, its ATen op) the story names, when it does
    # the story says the patched nodes' own values are not torch's ("torch defines 0/0 as 0"): the values can
    # contradict it (conclude._said)
    own_value_story: bool = False

    @property
    def graph_level(self) -> bool:
        return self.spec.get("op") in GRAPH_OPS

    @property
    def applicable(self) -> bool:
        """``repair`` can apply it to the file: a graph edit, or a re-export it can graft."""
        return self.graph_level or (self.graft is not None and all(self.graft.inputs))


class PatchError(Exception):
    pass


def _node(model: Any, name: str) -> Any:
    for n in model.graph.node:
        if n.name == name:
            return n
    raise PatchError(f"no node named {name!r}")


def _copy(model: Any) -> Any:
    return copy_model(model)


def apply(model: Any, patch: Patch, data_dir: Optional[Path] = None) -> Any:
    """A patched copy of ``model``; PatchError when the patch does not fit it.  ``data_dir``: the folder of
    ``model``'s external data (a weight-less proto, as drifttui loads a file): the weights the patched nodes
    read are brought into the copy first; a weight it still cannot read makes the patch not fit."""
    op = patch.spec.get("op")
    fn = _APPLY.get(op or "")
    if fn is None:
        raise PatchError(f"patch op {op!r} is not a graph edit")
    out = _copy(model)
    if data_dir is not None:
        touched = {patch.spec.get("node"), *patch.nodes}
        read = {patch.spec.get("name")} | {v for n in out.graph.node if n.name in touched for v in n.input}
        for t in out.graph.initializer:
            if t.name in read and t.data_location == t.EXTERNAL:
                t.CopyFrom(with_array(t, read_tensor(t, data_dir)))
    try:
        fn(out, patch)
    except ExternalTensorError as exc:
        raise PatchError(f"the patch reads a weight the file keeps in external data: {exc}") from exc
    return out


def _set_attribute(model: Any, p: Patch) -> None:
    from onnx import helper

    node = _node(model, p.spec["node"])
    name, value = p.spec["name"], p.spec["value"]
    keep = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(keep)
    if value is not None:
        node.attribute.append(helper.make_attribute(name, value))
    for k in range(len(node.output), int(p.spec.get("outputs", 0))):   # an attribute that needs more outputs
        node.output.append(f"{node.name}__drifttui_out{k}")          # (training_mode=1: three), none read


def _set_tensor(model: Any, name: str, arr: np.ndarray) -> None:
    """``name``'s values set to ``arr`` in the tensor's own element type (read from its type: the old values,
    maybe in external data, are not needed)."""
    for t in model.graph.initializer:
        if t.name == name:
            t.CopyFrom(with_array(t, arr))
            return
    for n in model.graph.node:
        if n.op_type == "Constant" and name in n.output:
            for a in n.attribute:
                if a.name == "value":
                    a.t.CopyFrom(with_array(a.t, arr))
                    return
    raise PatchError(f"no initializer or Constant named {name!r}")


def _replace_initializer(model: Any, p: Patch) -> None:
    if p.payload is None:
        raise PatchError("replace_initializer needs the new values")
    _set_tensor(model, p.spec["name"], p.payload)


def _replace_constant(model: Any, p: Patch) -> None:
    arr = p.payload if p.payload is not None else np.asarray(p.spec["value"])
    if "input" not in p.spec:
        _set_tensor(model, p.spec["name"], arr)
        return
    # one node's input only (constants.py): a constant shared with other nodes keeps its value there
    from onnx import helper, numpy_helper

    node, pos = _node(model, p.spec["node"]), int(p.spec["input"])
    if pos >= len(node.input) or node.input[pos] != p.spec["name"]:
        raise PatchError(f"{node.name} does not read {p.spec['name']!r} as input {pos}")
    t = _tensor(model, p.spec["name"])
    fresh = numpy_helper.from_array(np.asarray(arr, dtype=helper.tensor_dtype_to_np_dtype(t.data_type))
                                    .reshape(tuple(t.dims)), f"{p.spec['name']}__drifttui_{node.name}")
    model.graph.initializer.append(fresh)
    node.input[pos] = fresh.name


def _tensor(model: Any, name: str) -> Any:
    """The initializer or Constant tensor named ``name``."""
    for t in model.graph.initializer:
        if t.name == name:
            return t
    for n in model.graph.node:
        if n.op_type == "Constant" and name in n.output:
            for a in n.attribute:
                if a.name == "value":
                    return a.t
    raise PatchError(f"no initializer or Constant named {name!r}")


def _remove_cast(model: Any, p: Patch) -> None:
    node = _node(model, p.spec["node"])
    if node.op_type != "Cast":
        raise PatchError(f"{node.name} is not a Cast")
    node.op_type = "Identity"
    del node.attribute[:]


def _rewrite(model: Any, p: Patch) -> None:
    kind = p.spec.get("rewrite")
    if kind == "floor_div":
        _floor_div(model, p)
    elif kind == "resize_opset11":
        _resize_opset11(model, p)
    elif kind == "clip_bounds":
        _clip_bounds(model, p)
    elif kind == "workaround":
        _workaround(model, p)
    elif kind in _rewrites():
        _rewrites()[kind](model, p.spec)
    else:
        raise PatchError(f"unknown rewrite {kind!r}")


def _rewrites() -> dict[str, Any]:

    def wrapped(fn: Any) -> Any:
        def run(model: Any, spec: dict[str, Any]) -> None:
            try:
                fn(model, spec)
            except ValueError as exc:
                raise PatchError(str(exc)) from exc
        return run

    return {k: wrapped(fn) for k, fn in {**APPLY, "resize_gather": apply_resize_gather, "log1p": apply_log1p,
                                                         "expm1": apply_expm1, "logaddexp": apply_logaddexp,
                                                         **SINGULAR, **REMAINDER, **QUANTIZE, **NAN_SELECT, **NAN_COMPARE, **MASKED, **ACCUMULATE64,
                                                         **NAN_GRID, **INT_POW, **INT_WRAP, **OPMATH, **OPMATH_SCALAR, **CAST_FIRST, **ORIGIN64,
                                                         **OPERAND_WIDE, **HALF_RECURRENCE,
                                                         **RESIZE_MAP, **RUNTIME_SIZE, **DROPPED_ADDEND, **PACKED_PADDING, **CROSSED_CLIP,
                                                         **MASK_SELECT}.items()}


def _workaround(model: Any, p: Patch) -> None:
    node = _node(model, p.spec["node"])
    try:
        apply_workaround(model, node, p.spec.get("form", ""), _input_dtype(model, node.input[0]))
    except ValueError as exc:
        raise PatchError(str(exc)) from exc


def _floor_div(model: Any, p: Patch) -> None:
    """Div(a, b) on integers truncates; torch's // floors: Floor(Div(float64(a), float64(b)))."""
    from onnx import helper

    node = _node(model, p.spec["node"])
    a, b = node.input[0], node.input[1]
    out = node.output[0]
    to = int(p.spec.get("to", 7))
    base = node.name or out
    new = [helper.make_node("Cast", [a], [f"{base}/fa"], to=11, name=f"{base}/cast_a"),
           helper.make_node("Cast", [b], [f"{base}/fb"], to=11, name=f"{base}/cast_b"),
           helper.make_node("Div", [f"{base}/fa", f"{base}/fb"], [f"{base}/q"], name=f"{base}/div"),
           helper.make_node("Floor", [f"{base}/q"], [f"{base}/fq"], name=f"{base}/floor"),
           helper.make_node("Cast", [f"{base}/fq"], [out], to=to, name=node.name)]
    _replace_node(model, node, new)


def _resize_opset11(model: Any, p: Patch) -> None:
    """An opset-10 Resize (always asymmetric) in opset 11, with the coordinate mode torch uses.

    The whole model goes through ``onnx.version_converter`` (other ops change form between
    opsets 10 and 11 too); the Resize then gets the coordinate mode."""
    from onnx import helper, version_converter

    before = _node(model, p.spec["node"])
    outputs = [v for v in p.spec.get("outputs", before.output) if v]
    resizes = [n.name for n in model.graph.node if n.op_type in ("Resize", "Upsample")]
    position = resizes.index(before.name) if before.name in resizes else None
    try:
        converted = version_converter.convert_version(model, 11)
    except Exception as exc:  # noqa: BLE001 - the converter lacks adapters for some ops
        raise PatchError(f"onnx.version_converter could not move the graph to opset 11: {exc}") from exc
    model.CopyFrom(converted)
    node = converted_resize(model, p.spec["node"], outputs, position)
    if node is None:
        raise PatchError(f"the converted graph has no Resize for {p.spec['node']} (by name, output or position)")
    for other in model.graph.node:
        if other.op_type == "Resize" and other is not node:
            _as_before_opset11(other)
    keep = [a for a in node.attribute if a.name not in ("coordinate_transformation_mode", "nearest_mode")]
    del node.attribute[:]
    node.attribute.extend(keep)
    node.attribute.append(helper.make_attribute("coordinate_transformation_mode", p.spec.get("mode", "half_pixel")))
    mode = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "mode"), b"nearest")
    if mode in (b"nearest", "nearest"):
        node.attribute.append(helper.make_attribute("nearest_mode", p.spec.get("nearest_mode", "floor")))


def _as_before_opset11(node: Any) -> None:
    """A Resize the version converter moved to opset 11 that is not the patched one computes as it did: the
    converter leaves out coordinate_transformation_mode, whose opset-11 default (half_pixel) is not the
    asymmetric sampling every opset-9/10 Resize and Upsample does; a nearest one floors."""
    from onnx import helper

    names = {a.name for a in node.attribute}
    if "coordinate_transformation_mode" in names:
        return
    node.attribute.append(helper.make_attribute("coordinate_transformation_mode", "asymmetric"))
    mode = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "mode"), b"nearest")
    if mode in (b"nearest", "nearest") and "nearest_mode" not in names:
        node.attribute.append(helper.make_attribute("nearest_mode", "floor"))


def converted_resize(model: Any, name: str, outputs: list[str], position: Optional[int]) -> Any:
    """The Resize the version converter made of node ``name``: the converter renames nodes (in the
    whole file, not in the cut-out piece diagnose verified), so by name, else by the value it writes
    (value names are kept), else by its position among the graph's Resize nodes."""
    resizes = [n for n in model.graph.node if n.op_type == "Resize"]
    node = next((n for n in resizes if n.name == name), None)
    if node is None and outputs:
        node = next((n for n in resizes if [v for v in n.output if v] == outputs), None)
    if node is None and position is not None and position < len(resizes):
        node = resizes[position]
    return node


def _clip_bounds(model: Any, p: Patch) -> None:
    """New bounds for one Clip node: its own initializers (opset >= 11; a shared bound constant is
    left alone for the other nodes that read it), or its min/max attributes (opset < 11)."""
    from onnx import helper, numpy_helper

    node = _node(model, p.spec["node"])
    if node.op_type != "Clip":
        raise PatchError(f"{node.name} is not a Clip")
    changes = [(pos, key, p.spec[key]) for pos, key in ((1, "min"), (2, "max")) if key in p.spec]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 11)
    if opset < 11:                                        # bounds are attributes
        keep = [a for a in node.attribute if a.name not in {k for _, k, _ in changes}]
        del node.attribute[:]
        node.attribute.extend(keep)
        node.attribute.extend(helper.make_attribute(k, float(v)) for _, k, v in changes if v is not None)
        return
    dtype = np.dtype(p.spec["dtype"]) if p.spec.get("dtype") else _input_dtype(model, node.input[0])
    inputs = list(node.input) + [""] * (3 - len(node.input))
    for pos, key, value in changes:
        if value is None:
            inputs[pos] = ""
            continue
        name = f"{node.name or node.output[0]}/drifttui_{key}"
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        inputs[pos] = name
    while inputs and inputs[-1] == "":
        inputs.pop()
    del node.input[:]
    node.input.extend(inputs)


def _input_dtype(model: Any, value: str) -> Any:

    return input_dtype(model, value)


def _replace_node(model: Any, node: Any, new: list[Any]) -> None:
    nodes = list(model.graph.node)
    at = next(i for i, n in enumerate(nodes) if n is node or (n.name == node.name and n.output == node.output))
    nodes[at:at + 1] = new
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def _sequence(model: Any, p: Patch) -> None:
    """Graph edits applied in order to the same copy (each later spec names the nodes the earlier ones left)."""
    for spec in p.spec.get("patches", []):
        fn = _APPLY.get(spec.get("op", ""))
        if fn is None or spec.get("op") == "sequence":
            raise PatchError(f"patch op {spec.get('op')!r} is not a graph edit")
        fn(model, Patch(dict(spec), p.check, p.why, p.fix, p.kind, payload=p.payload))


_APPLY = {"set_attribute": _set_attribute, "replace_initializer": _replace_initializer,
          "remove_cast": _remove_cast, "replace_constant": _replace_constant, "rewrite": _rewrite,
          "sequence": _sequence}
