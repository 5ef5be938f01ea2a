"""Patches for exporter mistranslations that have a graph edit: each names what the exporter got
wrong, and the edit that makes the node compute what torch computes.

* ``floor_cast``: a float -> integer Cast truncates towards zero; torch's ``//`` / ``floor_divide``
  floors (TorchScript lowers a float floor division to Div + Cast) -> Floor before the Cast;
* ``softplus_threshold``: ONNX Softplus has no threshold; torch returns x above it ->
  Where(x > threshold, x, Softplus(x));
* ``scatter_reduction``: ScatterElements / ScatterND without reduction overwrite duplicate
  indices; ``scatter_add`` and ``index_put(accumulate=True)`` add -> reduction="add" (opset >= 16,
  the graph is converted when older);
* ``avgpool_divisor``: the exporters drop ``divisor_override`` -> AveragePool (pads counted) times
  kernel area / divisor;
* ``resize_antialias``: a downsampling Resize without antialias where the torch call antialiases
  -> antialias=1 (opset >= 18, converted when older).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Optional

import numpy as np

_INT = {2, 3, 4, 5, 6, 7, 12, 13}
_FLOAT = {1, 10, 11, 16}
_TYPE = {6: "int32", 7: "int64", 3: "int8", 5: "int16", 2: "uint8"}


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _patch(node: Any, rewrite: str, check: str, why: str, fix: str, module: str, **extra: Any) -> Any:
    from drifttui.core.explain.causes.patches import Patch

    return Patch({"op": "rewrite", "node": node.name, "rewrite": rewrite, **extra}, check, why, fix, "export",
                 module=module, nodes=[node.name])


def _modules(module: Any) -> list[Any]:
    return list(module.modules()) if module is not None else []


def _find(module: Any, cls: str) -> Optional[Any]:
    return next((m for m in _modules(module) if type(m).__name__ == cls), None)


def floor_cast(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    to = int(_attrs(node).get("to", 0))
    if to in _INT and types.get(node.input[0]) in _FLOAT:
        yield _patch(node, "floor_cast", "dtype",
                     f"Cast {node.name} to {_TYPE.get(to, 'an integer')} truncates towards zero where torch floors "
                     "(a float floor_divide or // lowered to Div + Cast)",
                     "export with the dynamo exporter (it lowers floor_divide to Floor), or write "
                     "torch.floor(a / b) in the forward", case.module)


def softplus_threshold(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    sp = _find(module, "Softplus")
    threshold = float(getattr(sp, "threshold", 20.0))
    beta = float(getattr(sp, "beta", 1.0))
    yield _patch(node, "softplus_threshold", "op-compat",
                 f"Softplus {node.name}: the threshold is missing (torch returns x where beta*x > {threshold:g}; "
                 "ONNX Softplus has no threshold)",
                 "export with the dynamo exporter (it keeps the threshold as a Where), or let `drifttui repair` "
                 "add it", case.module, threshold=threshold, beta=beta)


def scatter_reduction(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    if _attrs(node).get("reduction", "none") != "none":
        return
    opset = case.opset or 11
    yield _patch(node, "scatter_reduction", "op-compat",
                 f"{node.op_type} {node.name} has no reduction: duplicate indices overwrite instead of adding "
                 "(torch's scatter_add / index_put(accumulate=True) add them)",
                 "export with opset >= 16 (reduction='add' on " + node.op_type + ")"
                 + (f"; the file is at opset {opset}" if opset < 16 else ""), case.module, reduction="add")


def avgpool_divisor(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    pools = [m for m in _modules(module) if getattr(m, "divisor_override", None)]
    if len(pools) != 1:
        return
    d = int(pools[0].divisor_override)
    area = math.prod(_attrs(node).get("kernel_shape", [1]))
    if area != d:
        yield _patch(node, "avgpool_divisor", "padding",
                     f"AveragePool {node.name} divides by the window ({area}); torch's divisor_override divides "
                     f"by {d} (the exporters drop divisor_override)",
                     f"compute the pool as avg_pool * ({area} / {d}) in the forward (ONNX AveragePool has no "
                     "divisor), or let `drifttui repair` rewrite the node", case.module, divisor=d, area=area)


def resize_antialias(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    a = _attrs(node)
    if a.get("antialias", 0) or a.get("mode", "nearest") == "nearest":
        return
    want = getattr(module, "antialias", None)
    if want is False:
        return
    yield _patch(node, "resize_antialias", "interpolation",
                 f"Resize {node.name} does not antialias; the torch interpolate call downsamples with "
                 "antialias=True", "export with opset >= 18 (Resize has antialias since opset 18)"
                 + (f"; the file is at opset {case.opset}" if (case.opset or 18) < 18 else ""), case.module)


CANDIDATES: dict[str, Callable[..., Iterator[Any]]] = {
    "Cast": floor_cast, "Softplus": softplus_threshold, "ScatterElements": scatter_reduction,
    "ScatterND": scatter_reduction, "AveragePool": avgpool_divisor, "Resize": resize_antialias}


def candidates(case: Any, module: Any, types: dict[str, int]) -> list[Any]:
    out: list[Any] = []
    for node in case.model.graph.node:
        fn = CANDIDATES.get(node.op_type)
        if fn is not None:
            out.extend(fn(case, node, module, types))
    return out


# --- applying them (patches.apply dispatches the rewrites named here) ---------------------------

def _node(model: Any, name: str, op: Optional[str] = None) -> Any:
    from drifttui.core.explain.causes.patches import PatchError

    n = next((n for n in model.graph.node if n.name == name), None)
    if n is None or (op is not None and n.op_type not in op.split("|")):
        raise PatchError(f"no {op or 'node'} named {name!r}")
    return n


def scoped(anchor: Any, new: list[Any]) -> list[Any]:
    """New nodes carry the anchor node's metadata (the dynamo exporter's scope): the mapping keeps
    them in the anchor's module, so the repaired file is compared layer by layer like the original."""
    for n in new:
        n.metadata_props.extend(anchor.metadata_props)
    return new


def _insert_before(model: Any, node: Any, new: list[Any]) -> None:
    scoped(node, new)
    nodes = list(model.graph.node)
    at = next(i for i, n in enumerate(nodes) if n is node)
    nodes[at:at] = new
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def _dtype(model: Any, value: str) -> Any:
    from drifttui.core.explain.causes.patches import _input_dtype

    return _input_dtype(model, value)


def _at_least(model: Any, opset: int) -> None:
    """Move the whole graph to ``opset`` when it is older (onnx.version_converter)."""
    from onnx import version_converter

    from drifttui.core.explain.causes.patches import PatchError

    cur = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), opset)
    if cur >= opset:
        return
    try:
        model.CopyFrom(version_converter.convert_version(model, opset))
    except Exception as exc:  # noqa: BLE001 - the converter lacks adapters for some ops
        raise PatchError(f"onnx.version_converter could not move the graph to opset {opset}: "
                         f"{str(exc).splitlines()[0][:160]}") from exc


def _set(node: Any, **attrs: Any) -> None:
    from onnx import helper

    keep = [a for a in node.attribute if a.name not in attrs]
    del node.attribute[:]
    node.attribute.extend(keep + [helper.make_attribute(k, v) for k, v in attrs.items()])


def apply_floor_cast(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    node = _node(model, spec["node"], "Cast")
    x = node.input[0]
    floored = f"{node.name or node.output[0]}/drifttui_floor"
    node.input[0] = floored         # before the insert: that copies the nodes
    _insert_before(model, node, [helper.make_node("Floor", [x], [floored], name=floored)])


def apply_softplus_threshold(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = _node(model, spec["node"], "Softplus")
    x, out = node.input[0], node.output[0]
    p = f"{node.name or out}/drifttui_threshold"
    thr = numpy_helper.from_array(np.asarray(spec.get("threshold", 20.0), dtype=_dtype(model, x)), f"{p}/t")
    node.output[0] = f"{p}/sp"
    model.graph.initializer.append(thr)
    nodes = list(model.graph.node)
    at = next(i for i, n in enumerate(nodes) if n is node) + 1
    nodes[at:at] = scoped(node, [helper.make_node("Greater", [x, thr.name], [f"{p}/above"], name=f"{p}/greater"),
                                 helper.make_node("Where", [f"{p}/above", x, f"{p}/sp"], [out], name=f"{p}/where")])
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def apply_scatter_reduction(model: Any, spec: dict[str, Any]) -> None:
    _node(model, spec["node"], "ScatterElements|ScatterND")
    _at_least(model, 16)
    _set(_node(model, spec["node"], "ScatterElements|ScatterND"), reduction=spec.get("reduction", "add"))


def apply_avgpool_divisor(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = _node(model, spec["node"], "AveragePool")
    out = node.output[0]
    p = f"{node.name or out}/drifttui_divisor"
    k = numpy_helper.from_array(np.asarray(spec["area"] / spec["divisor"], dtype=_dtype(model, node.input[0])),
                                f"{p}/k")
    _set(node, count_include_pad=1)
    node.output[0] = f"{p}/avg"
    model.graph.initializer.append(k)
    nodes = list(model.graph.node)
    at = next(i for i, n in enumerate(nodes) if n is node) + 1
    nodes[at:at] = scoped(node, [helper.make_node("Mul", [f"{p}/avg", k.name], [out], name=f"{p}/mul")])
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def apply_resize_antialias(model: Any, spec: dict[str, Any]) -> None:
    _node(model, spec["node"], "Resize")
    _at_least(model, 18)
    _set(_node(model, spec["node"], "Resize"), antialias=1)


APPLY = {"floor_cast": apply_floor_cast, "softplus_threshold": apply_softplus_threshold,
         "scatter_reduction": apply_scatter_reduction, "avgpool_divisor": apply_avgpool_divisor,
         "resize_antialias": apply_resize_antialias}
