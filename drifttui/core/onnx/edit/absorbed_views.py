"""Round trips that give an absorbed module's output a value (prepare/plan/absorbed.py decides where).

For each view: a node right after the value's producer, in the module's scope, computes the value
in torch's layout (``<v>::absorbed``: the module's output), and a node right before the first
outside reader, in that reader's scope, takes it back to the file's layout (``<v>::unabsorbed``),
which every outside reader reads instead.  Numerically the same graph; the local run cuts at the
view and feeds torch's value back through the way back.  ``qviews.strip_round_trips`` removes both
from any file written for the user (their names end in ``drifttui_absorbed_`` / ``drifttui_unabsorbed_``
after the scope path, so the scope stays the module's).

A viewed value that is a model output (SqueezeBERT's last LayerNorm: its permute back and the encoder's permute
cancel) keeps its name, as the output pass compares outputs by name, but is then the way back's: the producer
writes ``<v>::kept``, the view reads that, and the way back (in the scope ``back_depth`` cuts the producer's
to: the callers of the module, never the module's own) computes ``<v>`` for the graph and for its readers.  So
the model output is computed from the module's output as in torch, not by the module's own nodes inside its
callers' local run.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.onnx.qviews import KEPT

FORWARD, BACK = "drifttui_absorbed_", "drifttui_unabsorbed_"


SCOPES = "pkg.torch.onnx.name_scopes"


class ViewLike(Protocol):
    value: str
    perm: Any
    shape: tuple[int, ...]
    readers: tuple[int, ...]
    depth: int          # the module's depth below the root: the forward node's scope is cut there;
                        # negative: a folded constant's view, scoped by ``module`` (no producer)
    module: str
    back_depth: int     # >= 0: the way back is scoped by the producer's scope cut to this depth (its first
                        # reader has no scope of its own); -1: by its first reader's scope


def _scoped(node: Any, name: str, depth: int = -1) -> tuple[str, list[tuple[str, str]]]:
    """A name in ``node``'s TorchScript scope path and its dynamo scope metadata, both cut to
    ``depth`` modules below the root (-1: ``node``'s own scope)."""
    import ast

    segs = node.name.split("/")[1:-1] if node.name.startswith("/") else None
    path = "" if segs is None else "/" + "".join(f"{s}/" for s in (segs if depth < 0 else segs[:depth]))
    meta = []
    for p in node.metadata_props:
        if p.key == SCOPES and depth >= 0:
            try:
                scopes = ast.literal_eval(p.value)
            except (ValueError, SyntaxError):
                continue
            meta.append((p.key, repr(scopes[:depth + 1] + [name])))
        elif p.key == SCOPES or depth < 0:
            meta.append((p.key, p.value))
    return path + name, meta


def _in_module(like: Any, module: str, name: str) -> tuple[str, list[tuple[str, str]]]:
    """A name and scope metadata inside ``module`` (a qualified name), in the flavour of ``like``."""
    parts = module.split(".") if module else []
    if like.name.startswith("/"):
        return "/" + "".join(f"{p}/" for p in parts) + name, []
    scopes = [""] + [".".join(parts[:k + 1]) for k in range(len(parts))] + [name]
    return name, [(SCOPES, repr(scopes))] if any(p.key == SCOPES for p in like.metadata_props) else []


def _node(op: str, inputs: list[str], output: str, like: Any, name: str, depth: int = -1, module: str = "",
          **attrs: Any) -> Any:
    import onnx

    full, meta = _in_module(like, module, name) if module else _scoped(like, name, depth)
    n = onnx.helper.make_node(op, inputs, [output], name=full, **attrs)
    for key, value in meta:
        n.metadata_props.add(key=key, value=value)
    return n


def _has_scope(node: Any) -> bool:
    return node.name.startswith("/") or any(p.key == SCOPES for p in node.metadata_props)


def _scoped_source(nodes: list[Any], producer: dict[str, int], at: int) -> Any:
    """The node whose scope names a view after node ``at``: ``at`` itself, or, when an optimiser made it
    without a scope (ORT's ReshapeFusion merging a Gemm's output Reshape into the next view), the nearest
    scoped node up its chain of computed inputs (the Gemm).  Named after a scope-less node, the view would
    have no scope either and be filled from its neighbours: outside the module it is the output of."""
    node, seen = nodes[at], {at}
    while not _has_scope(node):
        ups = [producer[i] for i in node.input if i in producer and producer[i] not in seen]
        if not ups:
            return nodes[at]
        seen.add(ups[0])
        node = nodes[ups[0]]
    return node


def with_views(model: Any, views: list[ViewLike], value_shapes: dict[str, tuple[int, ...]]) -> Any:
    """A copy of ``model`` with a round trip per view (``value_shapes``: each viewed value's shape)."""
    import onnx

    out = copy_model(model)
    nodes = list(out.graph.node)
    producer = {o: k for k, n in enumerate(nodes) for o in n.output if o}
    model_outputs = {o.name for o in out.graph.output}
    after: dict[int, list[Any]] = {}
    before: dict[int, list[Any]] = {}
    rewire: dict[tuple[int, str], str] = {}
    seen: set[str] = set()
    for k, v in enumerate(views):
        if v.value in seen:            # one round trip per value (a second would define its name twice)
            continue
        seen.add(v.value)
        folded = v.value not in producer       # a constant: the view goes right before its first reader
        kept = not folded and v.value in model_outputs
        first = min(v.readers) if v.readers else producer[v.value]
        at = first if folded else producer[v.value]
        src = nodes[first] if folded else _scoped_source(nodes, producer, at)
        home = {"module": v.module} if folded else {"depth": v.depth}
        put = before if folded else after
        fwd, back = f"{v.value}::absorbed", v.value if kept else f"{v.value}::unabsorbed"
        read = f"{v.value}{KEPT}" if kept else v.value
        if kept:
            nodes[at].output[list(nodes[at].output).index(v.value)] = read
        # the way back in its first reader's scope; a scope-less reader's (an optimiser's node): the producer's
        # scope cut to the depth the index filled in for the reader, never the module's own
        home_back, back_depth = (src, v.back_depth) if v.back_depth >= 0 and not folded else (nodes[first], -1)
        if v.perm is not None:
            put.setdefault(at, []).append(
                _node("Transpose", [read], fwd, src, f"{FORWARD}{k}", perm=list(v.perm), **home))
            way_back = _node("Transpose", [fwd], back, home_back, f"{BACK}{k}", depth=back_depth,
                             perm=[int(i) for i in np.argsort(v.perm)])
        else:
            to, there = f"drifttui_absorbed_shape_{k}", f"drifttui_unabsorbed_shape_{k}"
            out.graph.initializer.extend([
                onnx.numpy_helper.from_array(np.array(v.shape, dtype=np.int64), to),
                onnx.numpy_helper.from_array(np.array(value_shapes[v.value], dtype=np.int64), there)])
            put.setdefault(at, []).append(_node("Reshape", [read, to], fwd, src, f"{FORWARD}{k}", **home))
            way_back = _node("Reshape", [fwd, there], back, home_back, f"{BACK}{k}", depth=back_depth)
        if kept:
            after[at].append(way_back)         # right after the view: the readers read the value's name still
            continue
        before.setdefault(first, []).append(way_back)
        for r in v.readers:
            rewire[(r, v.value)] = back
    del out.graph.node[:]
    for k, n in enumerate(nodes):
        out.graph.node.extend(before.get(k, []))
        for pos, name in enumerate(n.input):
            if (k, name) in rewire:
                n.input[pos] = rewire[(k, name)]
        out.graph.node.append(n)
        out.graph.node.extend(after.get(k, []))
    return out
