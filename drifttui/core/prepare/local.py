"""The local-error graph: every module's own ONNX nodes fed from the PyTorch side.

A copy of the graph in which each edge that crosses from one module call's own nodes to
another's, and whose value has a PyTorch counterpart, is cut and turned into a graph
input (``feed::v``).  One ONNX Runtime run of this graph then gives, for every mapped
value, what ONNX computes from *correct* (PyTorch) inputs: the module's own error,
untouched by upstream drift.  Cost: about one extra run of the model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from drifttui.core.runtime.torch_hooks import Call
from drifttui.core.base.dtypes import ELEM_OF, LOW_FLOAT_ELEMS, elem_name
from drifttui.core.onnx.graph import GraphIndex
from drifttui.core.prepare.local_runs import is_cut, value_owners
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.onnx.qviews import QOPERATOR, is_view_node
from drifttui.core.runtime.unrounded import unrounded_reads_of

_TORCH_TO_ONNX = ELEM_OF


@dataclass
class LocalGraph:
    model: Any
    feeds: dict[str, str]          # graph input name -> original value (torch table key)
    outputs: dict[str, str]        # graph output name -> original value
    attribution: dict[str, int]    # original value -> call whose own error it measures
    first_node: dict[str, int]     # original value -> index of the node producing it
    feed_dtypes: dict[str, Any] = field(default_factory=dict)  # graph input name -> numpy dtype
    narrow: dict[str, str] = field(default_factory=dict)       # original value -> the low precision it holds


def _ref_of(plan: Plan, calls: list[Call], value: str, model_inputs: list[Any]) -> Optional[Any]:
    kind, ci, pos = plan.table[value]
    if kind == "graph_in":
        return model_inputs[pos] if pos < len(model_inputs) else None
    call = calls[ci]
    refs = call.outputs if kind == "out" else call.inputs
    return refs[pos] if pos < len(refs) else None


def build_local_graph(index: GraphIndex, plan: Plan, calls: list[Call],
                      model_inputs: list[Any]) -> Optional[LocalGraph]:
    """``model_inputs``: TensorRef-like objects (shape, dtype) of the flattened model inputs."""
    import onnx

    if not plan.localized:
        return None
    if any(a.HasField("g") or len(a.graphs) for n in index.nodes for a in n.proto.attribute):
        return None   # control flow: renaming outer-scope references inside subgraphs is not supported
    new_nodes, feeds = _cut_nodes(index, plan, calls, model_inputs)
    outputs, attribution, first_node = _local_outputs(index, plan)
    g = onnx.helper.make_graph(new_nodes, "drifttui_local", [], [], list(index.model.graph.initializer))
    feed_dtypes: dict[str, Any] = {}
    for name, v in feeds.items():
        ref = _ref_of(plan, calls, v, model_inputs) if v in plan.table else None
        if ref is None:
            return None
        elem = _TORCH_TO_ONNX.get(ref.dtype)
        if elem is None or ref.dtype == "bfloat16":
            return None     # numpy cannot carry bfloat16 feeds: no local errors (noted in the report)
        g.input.append(onnx.helper.make_tensor_value_info(name, elem, feed_dims(index, v, list(ref.shape))))
        feed_dtypes[name] = onnx.helper.tensor_dtype_to_np_dtype(elem)
        want = index.elem_types.get(v, 0)
        if want and want != elem and {want, elem} <= _FLOATS:
            _cast_feed(g, name, want)   # a reduced-precision file: the torch value rounded as the file holds it
        rounding = dequantized_from(index, v, elem)
        if rounding is not None:
            _round_feed(g, name, rounding)   # a float reader of a quantized value: rounded as the file rounds it
    for name in outputs:
        g.output.append(onnx.ValueInfoProto(name=name))
    model = onnx.helper.make_model(g, opset_imports=list(index.model.opset_import),
                                   ir_version=index.model.ir_version)
    model.functions.extend(index.model.functions)
    narrow = {v: n for v in outputs.values() for n in [autocast_input(index, plan, calls, v)] if n}
    return LocalGraph(model, feeds, outputs, attribution, first_node, feed_dtypes, narrow)


_FLOATS = {1, 10, 11, 16}     # float32, float16, float64, bfloat16


_WIDE = {ELEM_OF["float32"], ELEM_OF["float64"]}


def widened_from(index: GraphIndex, value: str) -> Optional[str]:
    """"float16" / "bfloat16" when a Cast to float32 / float64 makes ``value`` from a value of that type (the same
    numbers, held at that precision), None otherwise."""
    p = index.producer.get(value)
    node = index.nodes[p] if p is not None else None
    if node is None or node.op_type != "Cast" or not node.inputs or index.elem_types.get(value) not in _WIDE:
        return None
    narrow = index.elem_types.get(node.inputs[0], 0)
    return elem_name(narrow) if narrow in LOW_FLOAT_ELEMS else None


def autocast_input(index: GraphIndex, plan: Plan, calls: list[Call], value: str) -> Optional[str]:
    """The low precision a call's input ``value`` is compared at: a call that runs inside a ``torch.autocast``
    region rounds its float32 input to the region's dtype itself, so a file holding that input rounded (a float32
    value widened from it) computes what torch computes.  TorchScript shares one Cast of x for every Linear of a
    region that reads it; ``repair``'s opmath rewrite makes it a rounding pair; a Linear's torch input (unrounded
    x) was held to float32's 1e-4 against it: a false origin on a repaired file whose outputs equal torch's.
    Anywhere else a float16 round trip of a float32 value is a drift (the ``dtype`` class), compared as float32."""
    kind, ci, _pos = plan.table[value]
    narrow = widened_from(index, value) if kind == "in" and 0 <= ci < len(calls) else None
    return narrow if narrow and calls[ci].autocast == narrow else None


def feed_dims(index: GraphIndex, value: str, shape: list[int]) -> list[Any]:
    """The dims a feed is declared with: sample 0's, except where the file's value has a symbolic dim (a
    file exported with a dynamic length): that dim stays symbolic, so samples of other lengths feed the same
    local graph.  A value of a file with dynamic inputs whose shape the file does not say is all symbolic."""
    if not index.has_dynamic_inputs:
        return shape
    known = index.shapes.get(value)
    if known is None or len(known) != len(shape):
        return [f"{value}_d{k}" for k in range(len(shape))]
    return [d if isinstance(k, int) else f"{value}_d{j}" for j, (d, k) in enumerate(zip(shape, known))]


def _cast_feed(g: Any, name: str, to: int) -> None:
    """Feed ``name`` at the torch dtype and Cast it to the ONNX value's type (float16 in a float16
    file with float32 inputs) before its consumers: the own error then includes the rounding the
    file itself does at that edge, and the session loads (a float32 feed into a float16 op would not)."""
    import onnx

    cast = f"{name}::cast"
    for node in g.node:
        for k, inp in enumerate(node.input):
            if inp == name:
                node.input[k] = cast
    g.node.insert(0, onnx.helper.make_node("Cast", [name], [cast], to=to, name=f"drifttui_cast_{name}"))


def dequantized_from(index: GraphIndex, value: str, elem: int) -> Optional[Any]:
    """The file's own DequantizeLinear that makes ``value`` from a quantized activation (a
    QuantizeLinear's or a QLinear* / QGemm op's integers), with a static scale and zero point of
    the feed's type; None for anything else (a view of drifttui's, a dequantized weight or table).

    Its readers compute on the rounded value: the rounding belongs to them, as a quantized reader's
    own QuantizeLinear does (precision.py budgets that reader with its input's step)."""
    p = index.producer.get(value)
    node = index.nodes[p] if p is not None else None
    if node is None or node.op_type != "DequantizeLinear" or is_view_node(node) or len(node.inputs) < 3:
        return None
    q = index.producer.get(node.inputs[0])
    if q is None or not (index.nodes[q].op_type == "QuantizeLinear"
                         or index.nodes[q].op_type.startswith(QOPERATOR)):
        return None
    scale, zero = (index.constant_tensor(n) for n in node.inputs[1:3])
    if scale is None or zero is None or scale.data_type != elem:
        return None
    return node.proto


def _round_feed(g: Any, name: str, dq: Any) -> None:
    """Feed ``name`` (the torch value) to its readers through a QuantizeLinear -> DequantizeLinear
    pair at ``dq``'s scale, zero point and axis: the readers' own error includes that rounding."""
    import onnx

    rounded, q = f"{name}::rounded", f"{name}::q"
    for node in g.node:
        for k, inp in enumerate(node.input):
            if inp == name:
                node.input[k] = rounded
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in dq.attribute if a.name in ("axis", "block_size")}
    g.node.insert(0, onnx.helper.make_node("DequantizeLinear", [q, *dq.input[1:3]], [rounded],
                                           name=f"drifttui_round_deq_{name}", **attrs))
    g.node.insert(0, onnx.helper.make_node("QuantizeLinear", [name, *dq.input[1:3]], [q],
                                           name=f"drifttui_round_q_{name}", **attrs))


def _cut_nodes(index: GraphIndex, plan: Plan, calls: list[Call],
               model_inputs: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """A copy of every node, each input crossing a call boundary (or a graph input) cut into a feed.

    One pass over the nodes, so that a cut value gets the same ``feed::`` name everywhere.  An edge ONNX Runtime's
    CPU makes its reader read unrounded (a float16 value between two nodes it runs in float32:
    ``runtime/unrounded.py``) stays wired to its producer: a feed would hand the reader torch's rounded value and
    hide the rounding the whole file drops between the two calls (the reader's call then owns that error).  Only where
    torch holds that value in the low type too (the model's own float16: autocast, ``.half()``): in a converted file
    torch computes it in float32, the dropped rounding brings the file nearer torch, and a kept edge would hand the
    reader the producer's budgeted error as its own."""
    import onnx

    low = {v for node in index.nodes for v in node.inputs
           if v and v not in index.initializers and index.producer.get(v) is not None
           and index.elem_types.get(v) in LOW_FLOAT_ELEMS and is_cut(index, plan, v, node.index)
           and torch_low(plan, calls, v, model_inputs)}
    kept = unrounded_reads_of(index, low)
    feeds: dict[str, str] = {}
    new_nodes = []
    for node in index.nodes:
        proto = onnx.NodeProto()
        proto.CopyFrom(node.proto)
        del proto.input[:]
        for v in node.inputs:
            if not v or v in index.initializers:
                proto.input.append(v)
                continue
            # a cut boundary, or a graph input (with or without a torch counterpart)
            if is_cut(index, plan, v, node.index) and (v, node.proto.name) not in kept:
                feeds[f"feed::{v}"] = v
                proto.input.append(f"feed::{v}")
            else:
                proto.input.append(f"local::{v}")
        del proto.output[:]
        proto.output.extend(f"local::{o}" if o else "" for o in node.outputs)
        new_nodes.append(proto)
    return new_nodes, feeds


def torch_low(plan: Plan, calls: list[Call], value: str, model_inputs: list[Any]) -> bool:
    """Whether torch holds ``value`` in a low float type (float16 / bfloat16) too; False where it is not mapped."""
    ref = _ref_of(plan, calls, value, model_inputs) if value in plan.table else None
    return ref is not None and str(getattr(ref, "dtype", "")).replace("torch.", "") in ("float16", "bfloat16")


def _local_outputs(index: GraphIndex, plan: Plan) -> tuple[dict[str, str], dict[str, int], dict[str, int]]:
    """Every mapped value as a local output, the call whose own error it measures, its first node."""
    outputs = {f"local::{v}": v for v, (kind, _ci, _pos) in plan.table.items()
               if kind != "graph_in" and index.producer.get(v) is not None}
    attribution = value_owners(index, plan)
    first_node = {v: index.producer[v] for v in attribution}
    return outputs, attribution, first_node
