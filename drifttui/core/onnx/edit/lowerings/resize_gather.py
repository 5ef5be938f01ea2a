"""A nearest ``Resize`` replaced by Gathers on the source indices torch computes.

``F.interpolate(mode="nearest")`` picks, per resized axis, the source index
``min(floor(dst * s), in - 1)`` with ``s = float32(in) / out`` (a ``size=`` call) or
``float32(1 / scale_factor)`` (a ``scale_factor=`` call), all in float32; ``"nearest-exact"``
picks ``min(floor((dst + 0.5) * s), in - 1)``.  ONNX ``Resize`` divides by the scale instead
(``dst / (out / in)``), and ONNX Runtime does so in float32: at some output positions the two
roundings differ and the pixel is one off (upstream: microsoft/onnxruntime#12098, #28085, #28310
for sizes like 26 -> 64; the ONNX reference implementation computes what torch computes there, so
that is a runtime deviation).  With ``scale_factor`` the file holds ``float32(scale)`` and the
spec's own formula can round differently from torch's (the reference evaluator drifts too: an
export mistranslation that no Resize attribute removes).

Either way the same computation written as one ``Gather`` per resized axis on precomputed,
torch-computed indices is exact.  The indices are constants for a file with static shapes (the
shapes measured on the case: ``in_shape``/``out_shape`` in the spec); when the file has dynamic
input dims (``dynamic`` in the spec) they are computed in the graph from the runtime shape and the
Resize's own sizes or scales, as torch computes them, so the repair holds at every size.
``rewrites.resize_gather_patches`` proposes it as an ordinary patch, verified on fresh samples like
any other.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.graph import attribute_values as _attrs

from drifttui.core.onnx.edit.rewriting import find_node, replace_with

OPS = ("Resize", "Upsample")
UPSTREAM = "microsoft/onnxruntime#12098"


def torch_rule(node: Any) -> Optional[str]:
    """``nearest`` / ``nearest-exact``: the torch mode a nearest Resize stands for; None otherwise."""
    a = _attrs(node)
    if a.get("mode", "nearest") != "nearest":
        return None
    ct = a.get("coordinate_transformation_mode", "asymmetric")
    if ct == "half_pixel" and a.get("nearest_mode", "round_prefer_floor") == "round_prefer_ceil":
        return "nearest-exact"
    return "nearest" if ct == "asymmetric" else None


def torch_indices(n_in: int, n_out: int, rule: str, scale: Optional[float] = None,
                  shortcut: bool = True) -> np.ndarray:
    """The source index of each of ``n_out`` positions, as torch's upsample_nearest computes it.
    ``shortcut``: the 2-D ``nearest`` kernel's two shortcuts (the same size copies, twice the size
    shifts by one bit, whatever the scale_factor: pytorch/pytorch#121390); the 1-D and 3-D kernels
    have none (measured with torch 2.13)."""
    if shortcut and rule != "nearest-exact" and n_out in (n_in, 2 * n_in):
        return np.arange(n_out, dtype=np.int64) >> (0 if n_out == n_in else 1)
    s = np.float32(1.0 / float(scale)) if scale else np.float32(n_in) / np.float32(n_out)
    dst = np.arange(n_out, dtype=np.float32)
    src = np.floor((dst + np.float32(0.5)) * s) if rule == "nearest-exact" else np.floor(dst * s)
    return np.minimum(src.astype(np.int64), n_in - 1)


def _prune(model: Any, values: list[str]) -> None:
    """Drop the nodes that only computed ``values`` (the removed Resize's scales/sizes chain)."""
    graph_out = {o.name for o in model.graph.output}
    todo = [v for v in values if v]
    while todo:
        v = todo.pop()
        if v in graph_out or any(v in n.input for n in model.graph.node):
            continue
        prod = next((n for n in model.graph.node if v in n.output), None)
        if prod is None or any(o in graph_out or any(o in n.input for n in model.graph.node)
                               for o in prod.output if o and o != v):
            continue
        model.graph.node.remove(prod)
        todo.extend(prod.input)


def apply_resize_gather(model: Any, spec: dict[str, Any]) -> None:
    """Replace the Resize ``spec["node"]`` by Gathers on torch's indices (ValueError when it does not fit)."""
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "|".join(OPS))
    ins, outs = list(spec["in_shape"]), list(spec["out_shape"])
    if len(ins) != len(outs):
        raise ValueError("the Resize's input and output ranks differ")
    scales = spec.get("scales") or [None] * len(ins)
    rule = spec.get("rule", "nearest")
    cut = bool(spec.get("shortcut", True))
    idx_of = {a: torch_indices(ins[a], outs[a], rule, scales[a], cut) for a in range(len(ins))}
    axes = [a for a in range(len(ins)) if ins[a] != outs[a] or (idx_of[a] != np.arange(outs[a])).any()]
    p = f"{node.name or node.output[0]}/drifttui_gather"
    cur, new, consts = node.input[0], [], []
    dyn = bool(spec.get("dynamic"))
    for k, a in enumerate(axes):
        if dyn:             # the file's spatial sizes change at run time: the indices follow them
            idx_name = _graph_indices(node, a, rule, _user_scale(scales[a], ins[a], outs[a]), cut and len(ins) == 4,
                                      f"{p}/a{a}", new, consts)
        else:
            idx = numpy_helper.from_array(idx_of[a], f"{p}/idx{a}")
            consts.append(idx)
            idx_name = idx.name
        dst = node.output[0] if k == len(axes) - 1 else f"{p}/g{a}"
        new.append(helper.make_node("Gather", [cur, idx_name], [dst], axis=a, name=f"{p}/gather{a}"))
        cur = dst
    if not new:
        new = [helper.make_node("Identity", [cur], [node.output[0]], name=f"{p}/identity")]
    replace_with(model, node, new, consts)
    _prune(model, list(node.input[1:]))


def _user_scale(scale: Optional[float], n_in: int, n_out: int) -> Optional[float]:
    """The scale_factor the torch call passed: the file holds float32(scale), and torch indexes with
    1/scale in double; the measured out/in when it rounds to the file's float32 (64/26, not
    float32(64/26)), else the file's value."""
    if not scale:
        return None
    r = n_out / n_in
    return r if np.float32(r) == np.float32(scale) else float(scale)


def _graph_indices(node: Any, a: int, rule: str, scale: Optional[float], cut: bool, p: str,
                   new: list[Any], consts: list[Any]) -> str:
    """Nodes appended to ``new`` that compute axis ``a``'s source indices from the runtime shape as
    torch does: ``min(floor((dst [+ 0.5]) * s), in - 1)`` with ``s = float32(1 / scale)`` for a file
    that holds a scale, else ``float32(in) / float32(out)`` with ``out`` the Resize's own sizes
    (or ``floor(in * scale)``); the 2-D kernel's shortcuts as Where on ``out == in`` / ``out == 2 in``."""
    from onnx import TensorProto, helper, numpy_helper

    def c(name: str, value: Any, dtype: Any) -> str:
        consts.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), f"{p}/{name}"))
        return f"{p}/{name}"

    def op(kind: str, ins: list[str], out: str, **kw: Any) -> str:
        new.append(helper.make_node(kind, ins, [f"{p}/{out}"], name=f"{p}/{out}", **kw))
        return f"{p}/{out}"

    ax = c("axis", a, np.int64)
    n_in = op("Gather", [op("Shape", [node.input[0]], "shape"), ax], "in")
    in_f = op("Cast", [n_in], "in_f", to=TensorProto.FLOAT)
    sizes = node.input[3] if node.op_type == "Resize" and len(node.input) > 3 else ""
    if sizes:
        n_out = op("Gather", [sizes, ax], "out")
    else:
        sc = node.input[2] if node.op_type == "Resize" else node.input[1]
        n_out = op("Cast", [op("Floor", [op("Mul", [in_f, op("Gather", [sc, ax], "scale")], "in_x")], "floor_out")],
                   "out", to=TensorProto.INT64)
    out_f = op("Cast", [n_out], "out_f", to=TensorProto.FLOAT)
    s = c("s", np.float32(1.0 / float(scale)), np.float32) if scale else op("Div", [in_f, out_f], "s")
    ar = op("Range", [c("zero", 0, np.int64), n_out, c("one", 1, np.int64)], "range")
    dst = op("Cast", [ar], "dst", to=TensorProto.FLOAT)
    if rule == "nearest-exact":
        dst = op("Add", [dst, c("half", 0.5, np.float32)], "dst_half")
    src = op("Cast", [op("Floor", [op("Mul", [dst, s], "dst_s")], "floor")], "src", to=TensorProto.INT64)
    idx = op("Min", [src, op("Sub", [n_in, c("one_", 1, np.int64)], "last")], "idx")
    if cut and rule != "nearest-exact":
        half = op("Div", [ar, c("two", 2, np.int64)], "range_half")
        twice = op("Equal", [n_out, op("Mul", [n_in, c("two_", 2, np.int64)], "in2")], "twice")
        idx = op("Where", [op("Equal", [n_out, n_in], "same"), ar, op("Where", [twice, half, idx], "idx2")], "idx3")
    return idx
