"""The graph edits behind the rewrites of ``rewrites.py`` (and the helpers ``workarounds.py`` shares):
each edits a model in place from a patch spec and raises ValueError when it does not fit;
``patches.apply`` calls them on a copy and turns the ValueError into a PatchError.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from drifttui.core.onnx.order import node_order
from drifttui.core.onnx.weights import read_tensor



def find_node(model: Any, name: str, op: Optional[str] = None) -> Any:
    """The node named ``name`` (of one of the ``|``-separated ops when given); ValueError when there is none."""
    n = next((n for n in model.graph.node if n.name == name), None)
    if n is None or (op is not None and n.op_type not in op.split("|")):
        raise ValueError(f"no {op or 'node'} named {name!r}")
    return n


def scoped(anchor: Any, new: list[Any]) -> list[Any]:
    """New nodes carry the anchor node's metadata (the dynamo exporter's scope), and a TorchScript
    anchor's scope path (``/body/Cast`` -> ``/body/Cast_drifttui_floor``: a name under
    ``/body/Cast/`` would read as a module ``body.Cast`` and lose the file its name mapping): the
    mapping keeps them in the anchor's module, so the repaired file is compared layer by layer like
    the original."""
    ts = anchor.name.startswith("/")
    for n in new:
        n.metadata_props.extend(anchor.metadata_props)
        if ts and n.name.startswith(anchor.name + "/"):
            n.name = anchor.name + "_" + n.name[len(anchor.name) + 1:].replace("/", "_")
    return new


def replace_with(model: Any, node: Any, new: list[Any], inits: Optional[list[Any]] = None) -> None:
    """``node`` replaced in place by ``new`` (scoped in its module, ``scoped``), with the initializers they read."""
    scoped(node, new)
    nodes = list(model.graph.node)
    at = nodes.index(node)
    nodes[at:at + 1] = new
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(inits or [])


def splice_sorted(model: Any, new: list[Any], inits: Optional[list[Any]] = None, *,
                  anchor: Any = None, drop: Sequence[Any] = ()) -> None:
    """``new`` added to the graph (scoped in ``anchor``'s module when one is given, ``scoped``), the nodes
    ``drop`` removed, and the whole re-sorted topologically, since a new node may feed nodes already in
    the graph; with the initializers they read. ValueError when the edit makes a cycle."""
    if anchor is not None:
        scoped(anchor, new)
    nodes = [n for n in model.graph.node if all(n is not d for d in drop)] + list(new)
    order = node_order(nodes)
    if order is None:
        raise ValueError("the edited graph has a cycle")
    del model.graph.node[:]
    model.graph.node.extend(nodes[i] for i in order)
    model.graph.initializer.extend(inits or [])


def _insert_before(model: Any, node: Any, new: list[Any]) -> None:
    scoped(node, new)
    nodes = list(model.graph.node)
    at = next(i for i, n in enumerate(nodes) if n is node)
    nodes[at:at] = new
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def rerouted(node: Any, tag: str) -> tuple[str, str]:
    """``node``'s first output renamed ``<prefix>/raw`` so that the nodes a rewrite adds after it write the old
    name (every reader keeps reading it): -> (the old name, the prefix ``<node>/drifttui_<tag>`` of the new
    nodes).  Read the old value's dtype first: the value_info stays under the old name."""
    out = node.output[0]
    prefix = f"{node.name or out}/drifttui_{tag}"
    node.output[0] = f"{prefix}/raw"
    return out, prefix


def input_dtype(model: Any, value: str) -> Any:
    """The numpy dtype of a value (graph input, initializer or annotated intermediate); float32 else."""
    from onnx import helper

    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        if vi.name == value and vi.type.tensor_type.elem_type:
            return helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
    for t in model.graph.initializer:
        if t.name == value:
            return helper.tensor_dtype_to_np_dtype(t.data_type)
    return np.float32


_dtype = input_dtype


def _at_least(model: Any, opset: int) -> None:
    """Move the whole graph to ``opset`` when it is older (onnx.version_converter)."""
    from onnx import version_converter

    cur = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), opset)
    if cur >= opset:
        return
    try:
        model.CopyFrom(version_converter.convert_version(model, opset))
    except Exception as exc:  # noqa: BLE001 - the converter lacks adapters for some ops
        raise ValueError(f"onnx.version_converter could not move the graph to opset {opset}: "
                         f"{str(exc).splitlines()[0][:160]}") from exc


def _set(node: Any, **attrs: Any) -> None:
    from onnx import helper

    keep = [a for a in node.attribute if a.name not in attrs]
    del node.attribute[:]
    node.attribute.extend(keep + [helper.make_attribute(k, v) for k, v in attrs.items()])


def apply_floor_cast(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    node = find_node(model, spec["node"], "Cast")
    x = node.input[0]
    floored = f"{node.name or node.output[0]}/drifttui_floor"
    node.input[0] = floored         # before the insert: that copies the nodes
    _insert_before(model, node, [helper.make_node("Floor", [x], [floored], name=floored)])


def apply_softplus_threshold(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "Softplus")
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
    """reduction="add" on the node (opset >= 16; an opset-9/10 ``Scatter`` becomes ScatterElements
    on the way: the converter drops its name and renames its output, so the node is found again by
    its place, or its output)."""
    old = find_node(model, spec["node"], "ScatterElements|ScatterND|Scatter")
    at, out = list(model.graph.node).index(old), old.output[0]
    _at_least(model, 16)
    nodes = list(model.graph.node)
    ok = ("ScatterElements", "ScatterND")
    node = nodes[at] if at < len(nodes) and nodes[at].op_type in ok else \
        next((n for n in nodes if n.op_type in ok and out in n.output), None)
    if node is None:
        raise ValueError(f"no ScatterElements/ScatterND computes {out!r} at opset 16")
    node.name = node.name or spec["node"]
    _set(node, reduction=spec.get("reduction", "add"))


def apply_avgpool_divisor(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "AveragePool")
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
    find_node(model, spec["node"], "Resize")
    _at_least(model, 18)
    _set(find_node(model, spec["node"], "Resize"), antialias=1)


def apply_convert_opset(model: Any, spec: dict[str, Any]) -> None:
    """The whole file at a newer opset, nothing else edited (ablation.py: a conversion alone)."""
    _at_least(model, int(spec["opset"]))


APPLY = {"convert_opset": apply_convert_opset, "floor_cast": apply_floor_cast, "softplus_threshold": apply_softplus_threshold,
         "scatter_reduction": apply_scatter_reduction, "avgpool_divisor": apply_avgpool_divisor,
         "resize_antialias": apply_resize_antialias}


def static_value(model: Any, name: str) -> Optional[np.ndarray]:
    """The value of ``name`` when the model holds it: an initializer or a Constant node's output."""
    t = next((t for t in model.graph.initializer if t.name == name), None)
    if t is not None:
        return read_tensor(t)
    c = next((n for n in model.graph.node if n.op_type == "Constant" and name in n.output), None)
    a = next((a for a in c.attribute if a.name == "value"), None) if c is not None else None
    return read_tensor(a.t) if a is not None else None


def same_value(model: Any, x: str, y: str) -> bool:
    """``x`` and ``y`` are one value: one name, or two constants equal in dtype, shape and every element (the
    TorchScript exporter writes a Constant node per use of a number: ``remainder(-1e4, b)``'s Div and Sub read two)."""
    if x == y:
        return True
    vx, vy = static_value(model, x), static_value(model, y)
    return vx is not None and vy is not None and vx.dtype == vy.dtype and np.array_equal(vx, vy)
