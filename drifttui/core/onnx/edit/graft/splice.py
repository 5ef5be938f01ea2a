"""Graft a re-exported module into a copy of the deployed file (``repair`` of a verified re-export).

The origin's nodes are replaced by the re-export's graph: its inputs are wired to the deployed
file's values for the module call's inputs, its outputs take the names of the call's outputs (so
every consumer reads the new values), every other name gets a unique prefix, its initializers and
local functions are carried, and the two opsets are reconciled (``onnx.version_converter`` moves
the re-export to the file's opset, else the file to the re-export's).  A node of the origin whose
output is still read outside (a value the module shares with a later one) is kept.
``graft()`` never edits its arguments.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import helper, numpy_helper

from drifttui.core.onnx.edit.graft.scopes import below, set_scopes, torchscript_scope
from drifttui.core.onnx.io import copy_model
from drifttui.core.onnx.order import node_order, used_names

PREFIX = "drifttui_graft"


class GraftError(Exception):
    pass


@dataclass
class Graft:
    model: Any                       # onnx.ModelProto of the module re-exported alone
    inputs: list[str]                # the deployed file's value for each graph input of ``model``
    outputs: list[str]               # the deployed file's value for each graph output ("" = not read)
    remove: list[str] = field(default_factory=list)    # node names of the origin in the deployed file
    siblings: list["Graft"] = field(default_factory=list)   # the same class's other calls, grafted after it
    root: str = ""                   # the module's attribute inside the re-export's wrapper (graft_scopes.py)
    module: str = ""                 # the origin module's name (its children's nodes are re-rooted below it)
    baked: list[int] = field(default_factory=list)     # call inputs baked into ``model`` (not among its inputs)
    # input k is ``inputs[k]`` times this scalar: a scale a graph optimiser fused into the call's node (ORT's
    # FusedMatMul alpha) recomputed before the graft (propose/reexport/held_inputs.py)
    scaled: dict[int, float] = field(default_factory=dict)
    # what repair grafts first: the same re-export cut where the file holds the origin's input (narrow_graft.py)
    narrow: "Graft | None" = None


def _copy(model: Any) -> Any:
    return copy_model(model)


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _reconcile(full: Any, sub: Any) -> tuple[Any, Any]:
    """(full, sub) at one ai.onnx opset: the re-export converted to the file's, else the reverse."""
    from onnx import version_converter

    a, b = _opset(full), _opset(sub)
    if a == b:
        return full, sub
    errors = []
    for target, which in ((a, "sub"), (b, "full")):
        try:
            if which == "sub":
                return full, _valid(version_converter.convert_version(sub, target))
            return _valid(version_converter.convert_version(full, target)), sub
        except Exception as exc:  # noqa: BLE001 - no adapter for some op between the two opsets
            errors.append(f"{which}->{target}: {str(exc).splitlines()[0][:120]}")
    raise GraftError(f"the re-export (opset {b}) and the file (opset {a}) cannot be brought to one opset: "
                     + "; ".join(errors))


def _valid(model: Any) -> Any:
    """``model`` when the ONNX checker accepts it: the version converter can leave an attribute the
    target opset does not have (ReduceL2's ``noop_with_empty_axes`` taken from opset 18 to 14), so
    its output is checked before it is used (the other direction is tried then)."""
    import onnx

    if model.ByteSize() < 2 ** 31 - 1:
        onnx.checker.check_model(model)
    return model


def _rename_graph(graph: Any, names: dict[str, str]) -> None:
    for n in graph.node:
        n.input[:] = [names.get(v, v) for v in n.input]
        n.output[:] = [names.get(v, v) for v in n.output]
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _rename_graph(g, names)     # outer-scope references inside If/Loop bodies


def _sub_names(sub: Any, inputs: list[str], outputs: list[str], prefix: str) -> dict[str, str]:
    g = sub.graph
    inits = {t.name for t in g.initializer}
    feeds = [i.name for i in g.input if i.name not in inits]
    if len(feeds) != len(inputs):
        raise GraftError(f"the re-export has {len(feeds)} input(s), the module call {len(inputs)}")
    if len(g.output) != len(outputs):
        raise GraftError(f"the re-export has {len(g.output)} output(s), the module call {len(outputs)}")
    names: dict[str, str] = {}
    for n in g.node:
        for v in list(n.input) + list(n.output):
            if v:
                names.setdefault(v, f"{prefix}/{v}")
    for v in inits:
        names[v] = f"{prefix}/{v}"
    names.update(dict(zip(feeds, inputs)))
    for o, want in zip(g.output, outputs):
        if want:
            names[o.name] = want
    return names


def _kept(nodes: list[Any], removed: set[int], replaced: set[str], graph_outputs: set[str]) -> set[int]:
    """Removed nodes still needed: one of their other outputs is read by a node that stays."""
    keep: set[int] = set()
    changed = True
    while changed:
        changed = False
        read = set(graph_outputs)
        for i, n in enumerate(nodes):
            if i not in removed or i in keep:
                read.update(n.input)
        for i in removed - keep:
            if any(v and v not in replaced and v in read for v in nodes[i].output):
                keep.add(i)
                changed = True
    return keep


def toposort(nodes: list[Any]) -> list[Any]:
    """``nodes`` in topological order (``order.node_order``); GraftError on a cycle."""
    order = node_order(nodes)
    if order is None:
        raise GraftError("the grafted graph has a cycle")
    return [nodes[i] for i in order]


def _missing(nodes: list[Any], available: set[str]) -> list[str]:
    have = set(available) | {v for n in nodes for v in n.output}
    return sorted({v for n in nodes for v in n.input if v and v not in have})


def _in_scope(sub: Any, anchor: Any, prefix: str, root: str = "", module: str = "") -> None:
    """The grafted nodes sit in the origin's scope: the anchor's metadata (dynamo scopes) and, for a
    TorchScript file, names under the origin's scope path and then the node's own path below the origin
    ("/body/lin/...", graft_scopes.torchscript_scope; the anchor's scope path when its name does not name the
    origin), so the repaired file is mapped to the modules like the original."""
    scope = anchor.name.rsplit("/", 1)[0] + "/" if anchor.name.startswith("/") and "/" in anchor.name[1:] else ""
    for n in sub.graph.node:
        where = below(n, root)              # its own place, before the anchor's metadata replaces it
        named = torchscript_scope(anchor.name, module, where) if scope else None
        n.name = f"{named or scope}{prefix}/{n.name or n.op_type}"
        del n.metadata_props[:]
        n.metadata_props.extend(anchor.metadata_props)
        set_scopes(n, anchor, where, module)


def _free_prefix(names: set) -> str:
    """The first of drifttui_graft, drifttui_graft1, ... that no value or node name holds: a graft whose values
    are all the file's (one node, fed and read by the file) names only its nodes, and a second graft (a
    sibling's) must not take the same names."""
    prefix, k = PREFIX, 0
    while any(v.startswith(prefix + "/") or f"/{prefix}/" in v for v in names):
        k += 1
        prefix = f"{PREFIX}{k}"
    return prefix


def _retype_outputs(full: Any, sub: Any, outputs: list[str]) -> None:
    """A graph output the graft now computes (``outputs``: the file's value for each of the graft's outputs) is
    declared of the graft's type: a file whose lowering lost torch's type promotion returns a bool where torch
    returns a float, and the graft computes the float."""
    made = {v: o.type.tensor_type.elem_type for o, v in zip(sub.graph.output, outputs)
            if v and o.type.tensor_type.elem_type}
    for o in full.graph.output:
        if made.get(o.name):
            o.type.tensor_type.elem_type = made[o.name]


def _merge_imports(full: Any, sub: Any) -> None:
    """The graft's opset imports of domains the file lacks, and its local functions the file does not hold."""
    have = {(o.domain, o.version) for o in full.opset_import}
    domains = {o.domain for o in full.opset_import}
    for o in sub.opset_import:
        if o.domain not in domains and (o.domain, o.version) not in have:
            full.opset_import.append(o)
    known = {(f.domain, f.name) for f in full.functions}
    full.functions.extend(f for f in sub.functions if (f.domain, f.name) not in known)


def graft(full_model: Any, g: Graft) -> Any:
    """A copy of ``full_model`` with the origin's nodes replaced by ``g.model``'s graph."""
    import onnx

    before = list(full_model.graph.node)
    full, sub = _reconcile(_copy(full_model), _copy(g.model))
    taken = {v for n in full.graph.node for v in list(n.input) + list(n.output)} | \
        {t.name for t in full.graph.initializer} | {i.name for i in full.graph.input}
    node_names = {n.name for n in full.graph.node}
    prefix = _free_prefix(taken | node_names)
    unknown = [v for v in g.inputs if v not in taken]
    if unknown:
        raise GraftError(f"the file has no value {unknown[0]!r} for the module's input")
    inputs, unfused = _unfused(sub, g, taken | node_names)
    names = _sub_names(sub, inputs, g.outputs, prefix)
    _rename_graph(sub.graph, names)
    for t in sub.graph.initializer:
        t.name = names.get(t.name, t.name)
    nodes = list(full.graph.node)
    want = set(g.remove)
    # the version converter drops the name of a node it adapts (Upsample -> Resize): such a node is the
    # origin's when it produces a value an origin node produced
    gone = {v for n in before if n.name in want for v in n.output if v}
    removed = {i for i, n in enumerate(nodes) if n.name in want or (not n.name and gone & set(n.output))}
    if not removed:
        raise GraftError("none of the origin's nodes is in the file")
    _in_scope(sub, nodes[min(removed)], prefix, g.root, g.module)
    replaced = {v for v in g.outputs if v}
    keep = _kept(nodes, removed, replaced, {o.name for o in full.graph.output})
    for i in keep:                  # a kept node must not produce a value the graft now produces
        nodes[i].output[:] = [f"{prefix}/stale/{v}" if v in replaced else v for v in nodes[i].output]
    stay = [n for i, n in enumerate(nodes) if i not in removed or i in keep]
    avail = {i.name for i in full.graph.input} | {t.name for t in full.graph.initializer}
    merged = stay + unfused[0] + list(sub.graph.node)
    sub.graph.initializer.extend(unfused[1])
    missing = _missing(merged, avail | {t.name for t in sub.graph.initializer})
    if missing:
        raise GraftError(f"the grafted graph reads values nothing produces: {', '.join(missing[:3])}")
    ordered = toposort(merged)
    del full.graph.node[:]
    full.graph.node.extend(ordered)
    full.graph.initializer.extend(sub.graph.initializer)
    stale = [vi for vi in full.graph.value_info if vi.name in replaced]
    for vi in stale:
        full.graph.value_info.remove(vi)
    _retype_outputs(full, sub, g.outputs)
    _merge_imports(full, sub)
    _drop_dead(full)
    _single_assignment(full)
    try:
        return _valid(copy_model(full))
    except onnx.checker.ValidationError as exc:        # never a file that ONNX Runtime refuses
        raise GraftError(f"the grafted graph is not valid ONNX ({str(exc).splitlines()[0][:160]})") from exc


def _unfused(sub: Any, g: Graft, taken: set[str]) -> tuple[list[str], tuple[list[Any], list[Any]]]:
    """(the file's value for each input of the re-export, (the scope-less Mul nodes, their scalars)): each input
    of ``g.scaled`` is the file's value times its scalar, recomputed by a Mul of the re-export's input type (the
    index gives a scope-less node the scope its neighbours share: the parent whose op the fusion took)."""
    inputs, nodes, inits = list(g.inputs), [], []
    feeds = [i for i in sub.graph.input if i.name not in {t.name for t in sub.graph.initializer}]
    for k, s in sorted(g.scaled.items()):
        if k >= len(inputs) or k >= len(feeds) or s == 1.0:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(feeds[k].type.tensor_type.elem_type)
        name, node, j = f"{inputs[k]}_unfused", f"unfused_scale_{k}", 0
        while name in taken or node in taken:      # (``taken``: the file's node names too)
            j += 1
            name, node = f"{inputs[k]}_unfused{j}", f"unfused_scale_{k}_{j}"
        inits.append(numpy_helper.from_array(np.asarray(s, dtype=dtype), f"{name}_scale"))
        nodes.append(helper.make_node("Mul", [inputs[k], f"{name}_scale"], [name], name=node))
        inputs[k] = name
    return inputs, (nodes, inits)


def _single_assignment(model: Any) -> None:
    """GraftError when a value is produced twice (an origin node the conversion renamed beyond
    recognition stayed next to the graft): never a file that ONNX Runtime refuses."""
    seen: set[str] = set()
    for n in model.graph.node:
        for v in n.output:
            if v and v in seen:
                raise GraftError(f"the grafted graph produces {v!r} twice (the file's conversion to opset "
                                 f"{_opset(model)} renamed the origin's nodes)")
            seen.add(v)


def _drop_dead(model: Any) -> None:
    """Nodes and initializers nothing reads any more (the removed origin's constants)."""
    g = model.graph
    read = {o.name for o in g.output}
    alive = []
    for n in reversed(list(g.node)):
        if any(v in read for v in n.output if v):
            alive.append(n)
            read.update(used_names(n))     # outer-scope names of If/Loop bodies too, nested ones included
    alive.reverse()
    del g.node[:]
    g.node.extend(alive)
    inits = [t for t in g.initializer if t.name in read or t.name in {i.name for i in g.input}]
    del g.initializer[:]
    g.initializer.extend(inits)
