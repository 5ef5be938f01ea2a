"""An index over an ONNX graph: producers, consumers, scopes, shapes, initializers.

Scopes come from the exporter: the dynamo exporter writes ``pkg.torch.onnx.name_scopes``
metadata (qualified module names, the last entry being the FX node name); the
TorchScript exporter encodes them in node names (``/layer1/layer1.0/relu_1/Relu``).
Nodes without either (optimiser-made) get the deepest scope shared by their neighbours.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import elem_name
from drifttui.core.onnx.weights import read_tensor, weights_in, with_array

DYNAMO = "dynamo"
TORCHSCRIPT = "torchscript"
UNKNOWN = "user file"


@dataclass
class Node:
    index: int
    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    proto: Any
    # scope as a list of raw segments: for dynamo qualified module names (root "" excluded);
    # for TorchScript the raw path segments ("layer1", "layer1.0", "relu_1")
    scope: Optional[list[str]] = None
    scope_filled: bool = False
    fused_rule: str = ""


@dataclass
class GraphIndex:
    model: Any
    nodes: list[Node]
    producer: dict[str, int]
    consumers: dict[str, list[int]]
    initializers: dict[str, Any]       # name -> TensorProto
    graph_inputs: list[str]            # non-initializer inputs, in order
    graph_outputs: list[str]
    shapes: dict[str, list[Any]]       # value -> dims (ints or symbolic strings)
    elem_types: dict[str, int]
    flavour: str                       # DYNAMO | TORCHSCRIPT | UNKNOWN
    opset: Optional[int]
    producer_name: str
    constant_values: set[str] = field(default_factory=set)  # outputs of Constant nodes
    # the ONNX file the graph was read from; external-data references are relative to its folder
    # (the proto never holds those weights: see loading.load_onnx). None: built in memory.
    path: Optional[Path] = None
    # facts derived from the graph once and read by several stages (key -> value; ``runtime/unrounded.py``)
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def data_dir(self) -> Optional[Path]:
        """Where the external data of the graph's initializers lies (None: built in memory)."""
        return Path(self.path).parent if self.path is not None else None      # a caller may give a str

    @property
    def has_scopes(self) -> bool:
        return any(n.scope for n in self.nodes)

    @property
    def has_dynamic_inputs(self) -> bool:
        """A graph input declares a symbolic dim (the file runs at other sizes than its example's)."""
        return any(not isinstance(d, int) for name in self.graph_inputs for d in self.shapes.get(name) or [])

    def input_shape(self, name: str) -> list[Any]:
        return self.shapes.get(name, [])

    def is_static(self, name: str) -> bool:
        return name in self.initializers or name in self.constant_values

    def constant_tensor(self, name: str) -> Optional[Any]:
        """The TensorProto of a constant tensor: an initializer, or the ``value`` of a Constant node
        (tools such as onnxsim leave folded weights as Constant nodes: weights like any other)."""
        t = self.initializers.get(name)
        if t is not None or name not in self.constant_values:
            return t
        return _constant_value(self.nodes[self.producer[name]].proto)

    def constant_tensors(self) -> dict[str, Any]:
        """Every constant tensor by name: the initializers, then the Constant nodes' values."""
        out = dict(self.initializers)
        for name in self.constant_values:
            t = self.constant_tensor(name)
            if t is not None and name not in out:
                out[name] = t
        return out


def _constant_value(proto: Any) -> Optional[Any]:
    """A Constant node's tensor (its ``value`` attribute), or None (value_ints, sparse...)."""
    return next((a.t for a in proto.attribute if a.name == "value" and a.HasField("t")), None)


def _dims(type_proto: Any) -> Optional[list[Any]]:
    if not type_proto.HasField("tensor_type"):
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    out: list[Any] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        else:
            out.append(d.dim_param or "?")
    return out


def _scope_dynamo(node: Any) -> Optional[list[str]]:
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            try:
                scopes = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError):
                return None
            # first entry is the root "", last is the FX node name
            return [s for s in scopes[1:-1]]
    return None


def _scope_torchscript(name: str) -> Optional[list[str]]:
    if not name.startswith("/"):
        return None
    parts = name.split("/")[1:-1]   # drop leading "" and the op name
    return parts


def build_index(model: Any, path: Optional[Path] = None) -> GraphIndex:
    """One pass over the nodes filling every index at once (producers, consumers, scopes): a pass
    per index would walk a 100k-node graph several times."""
    graph = model.graph
    shapes, elem_types = value_types(model)
    initializers = {t.name: t for t in graph.initializer}
    flavour = _flavour(graph)
    nodes: list[Node] = []
    producer: dict[str, int] = {}
    consumers: dict[str, list[int]] = {}
    constants: set[str] = set()
    for i, n in enumerate(graph.node):
        scope = _scope_dynamo(n) if flavour == DYNAMO else _scope_torchscript(n.name) if flavour == TORCHSCRIPT else None
        rule = next((p.value for p in n.metadata_props if p.key == "pkg.onnxscript.rewriter.rule_name"), "")
        node = Node(i, n.name or f"{n.op_type}_{i}", n.op_type, n.domain, list(n.input), list(n.output), n,
                    scope, False, rule)
        nodes.append(node)
        for o in n.output:
            if o:
                producer[o] = i
        for inp in _all_inputs(n):
            if inp:
                consumers.setdefault(inp, []).append(i)
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            constants.update(o for o in n.output if o)

    graph_inputs = [i.name for i in graph.input if i.name not in initializers]
    index = GraphIndex(
        model=model, nodes=nodes, producer=producer, consumers=consumers, initializers=initializers,
        graph_inputs=graph_inputs, graph_outputs=[o.name for o in graph.output], shapes=shapes,
        elem_types=elem_types, flavour=flavour,
        opset=next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None),
        producer_name=f"{model.producer_name} {model.producer_version}".strip(),
        constant_values=constants, path=path,
    )
    if flavour != UNKNOWN:
        _fill_missing_scopes(index)
    return index


def value_types(model: Any) -> tuple[dict[str, list[Any]], dict[str, int]]:
    """Shapes and element types of every value: shape inference, then the initializers."""
    import onnx

    inferred = model
    # data propagation first: a Reshape whose shape the graph computes (Shape -> Slice -> Concat) has a static
    # output only through it, and a tool that drops the exporter's value_info (the ONNX Optimizer) leaves every
    # value after such a Reshape of unknown size (LeViT's LinearNorm outputs: 13 calls unmapped)
    for data_prop in (True, False):
        try:
            inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                                         data_prop=data_prop)
            break
        except Exception:
            continue
    shapes: dict[str, list[Any]] = {}
    elem_types: dict[str, int] = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        d = _dims(vi.type)
        if d is not None:
            shapes[vi.name] = d
        if vi.type.HasField("tensor_type"):
            elem_types[vi.name] = vi.type.tensor_type.elem_type
    for t in model.graph.initializer:
        shapes.setdefault(t.name, list(t.dims))
        elem_types.setdefault(t.name, t.data_type)
    return shapes, elem_types


def _flavour(graph: Any) -> str:
    """Which exporter wrote the scopes: dynamo metadata, TorchScript node paths, or neither."""
    if any(p.key == "pkg.torch.onnx.name_scopes" for n in graph.node for p in n.metadata_props):
        return DYNAMO
    slash_names = sum(1 for n in graph.node if n.name.startswith("/"))
    if graph.node and slash_names >= max(1, len(graph.node) // 3):
        return TORCHSCRIPT
    return UNKNOWN


def _all_inputs(node: Any) -> list[str]:
    """Explicit inputs plus outer-scope names used inside subgraphs (If/Loop/Scan)."""
    names = list(node.input)
    for attr in node.attribute:
        graphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
        for g in graphs:
            defined = {i.name for i in g.input} | {t.name for t in g.initializer}
            for sub in g.node:
                defined.update(sub.output)
            for sub in g.node:
                for nm in _all_inputs(sub):
                    if nm and nm not in defined:
                        names.append(nm)
    return names


def common_prefix(scopes: list[list[str]]) -> list[str]:
    """The longest scope every one of ``scopes`` starts with."""
    if not scopes:
        return []
    prefix = list(scopes[0])
    for s in scopes[1:]:
        k = 0
        while k < len(prefix) and k < len(s) and prefix[k] == s[k]:
            k += 1
        prefix = prefix[:k]
    return prefix


def _fill_missing_scopes(index: GraphIndex) -> None:
    """Give scope-less nodes the deepest scope their scoped neighbours share (repeat to a fixpoint)."""
    for _ in range(4):
        changed = False
        for node in index.nodes:
            if node.scope is not None:
                continue
            neigh: list[list[str]] = []
            for inp in node.inputs:
                p = index.producer.get(inp)
                if p is not None and index.nodes[p].scope is not None and inp not in index.constant_values:
                    neigh.append(index.nodes[p].scope)  # type: ignore[arg-type]
                elif inp in index.graph_inputs:
                    neigh.append([])
            for out in node.outputs:
                for c in index.consumers.get(out, []):
                    if index.nodes[c].scope is not None:
                        neigh.append(index.nodes[c].scope)  # type: ignore[arg-type]
                if out in index.graph_outputs:
                    neigh.append([])
            if neigh:
                node.scope = common_prefix(neigh)
                node.scope_filled = True
                changed = True
        if not changed:
            break
    for node in index.nodes:
        if node.scope is None:
            node.scope = []
            node.scope_filled = True


# --- details for reports and the inspector ---------------------------------------------

FX_KEY = "pkg.torch.onnx.fx_node"       # the dynamo exporter's record of the FX call a node translates
_FX_TARGET = re.compile(r"= \w+\[target=(.+?)\]\(")


def fx_record(node: Any) -> str:
    """The FX call the dynamo exporter recorded on an ONNX node proto ("" when none: a TorchScript file)."""
    return next((p.value for p in node.metadata_props if p.key == FX_KEY), "")


def fx_target(node: Any) -> Optional[str]:
    """The recorded FX call's target (``torch.ops.aten._to_copy.default``), or None."""
    m = _FX_TARGET.search(fx_record(node))
    return m.group(1) if m else None


def attribute_values(node: Any) -> dict[str, Any]:
    import onnx

    out: dict[str, Any] = {}
    for a in node.attribute:
        try:
            v = onnx.helper.get_attribute_value(a)
        except Exception:
            v = "?"
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, (list, tuple)):
            v = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
            if v and not isinstance(v[0], (int, float, str)):
                v = f"<{len(v)} {a.type}>"
        elif not isinstance(v, (int, float, str)):
            v = f"<{type(v).__name__}>"
        out[a.name] = v
    return out


def tensor_array(index: GraphIndex, name: str) -> Optional[np.ndarray]:
    """The values of the constant tensor ``name`` (an initializer or a Constant's value), read where they
    lie (the proto stays without weights), or None when ``name`` is no constant."""
    t = index.constant_tensor(name)
    return read_tensor(t, index.data_dir) if t is not None else None


def full_model(index: GraphIndex) -> Any:
    """A copy of the graph with every weight in the proto (read from the external data), for a
    model written out whole (``drifttui repair --out``); the index's own proto stays without them."""
    return weights_in(index.model, index.data_dir)


def with_data(index: GraphIndex, t: Any) -> Any:
    """``t`` with its data in the proto (read from its external file), for a graph that leaves
    the run: a few tensors, never the whole model."""
    if t.data_location != t.EXTERNAL or index.data_dir is None:
        return t
    return with_array(t, read_tensor(t, index.data_dir))


class ReadInitializers(dict):
    """A graph copy's initializers by name, each one read given its data in place (from the external file of
    ``index``) the first time it is looked up: code that reads ``read_tensor(inits[name])`` and edits
    ``inits[name]`` works on a file whose weights lie outside the proto, and only the tensors it reads are read."""

    def __init__(self, index: GraphIndex, graph: Any) -> None:
        super().__init__((t.name, t) for t in graph.initializer)
        self.index = index

    def __getitem__(self, name: str) -> Any:
        t = super().__getitem__(name)
        if t.data_location == t.EXTERNAL and self.index.data_dir is not None:
            t.CopyFrom(with_data(self.index, t))
        return t

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default


elem_type_name = elem_name       # the one table: core/dtypes.py
