"""Keep nodes of a reduced-precision file in float32: a graph patch on a copy.

The nodes named (reduced-precision nodes of ``precision.scan``) compute in float32 again:
  * float16 / bfloat16: float16 initializers they read become float32 (the torch tensor of the same
    name when there is one, else the stored values widened), float16 activations are Cast to float32
    at their inputs, their outputs are Cast back for consumers outside the set (consumers inside take
    the float32 value), Casts to float16 inside the set cast to float32;
  * int8 dynamic (``quantize_dynamic``): a MatMulInteger / ConvInteger with its Cast and output-scale
    Mul becomes a float MatMul / Conv on the quantizer's float input and the float weight (torch's, or
    the int8 weight dequantized);
  * int8 QDQ: the node reads the float values its DequantizeLinear(QuantizeLinear(x)) inputs came
    from (weights: torch's or dequantized), and its output skips the QuantizeLinear/DequantizeLinear
    pair behind it, where the user's quantizer drops that pair for the same list (an activation's
    pair stays while its producer or a reader is quantized: qdq_pairs.py);
  * int8 QOperator (QLinearConv, QLinearMatMul, QGemm, QLinearAdd...): DequantizeLinear in, the float
    op, QuantizeLinear back to the node's output scale (keep_qoperator.py);
  * int4 weight-only (MatMulNBits): a float MatMul (and its bias Add) with torch's weight where the
    blocks are a rounded copy of it, else the blocks dequantized (nbits.py).
Unused nodes are pruned.  The keep-list is also printed in the forms the converters take
(``converter_forms``).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.graph import ReadInitializers, tensor_array
from drifttui.core.onnx.io import copy_model
from drifttui.core.onnx.order import used_names
from drifttui.core.base.dtypes import LOW_FLOAT_ELEMS
from drifttui.core.onnx import nbits
from drifttui.core.onnx.edit.keep.qoperator import kept_quantizer, moved_float, qoperator, supported
from drifttui.core.onnx.nbits import NBITS_OPS
from drifttui.core.onnx.qdq_pairs import pair_removed
from drifttui.core.onnx.qweights import int8_values, rounded_source
from drifttui.core.onnx.qviews import QOPERATOR, is_view_node, strip_round_trips, strip_views
from drifttui.core.onnx.weights import read_tensor

FLOAT, FLOAT16 = 1, 10


def keep_float32(model: Any, index: Any, nodes: set[int], torch_tensors: Optional[dict[str, np.ndarray]] = None) -> Any:
    """A patched copy of ``model`` (a ModelProto whose nodes ``index`` describes)."""
    import onnx

    torch_tensors = torch_tensors or {}
    out = copy_model(model)
    g = out.graph
    inits = ReadInitializers(index, g)
    new_inits: list[Any] = []
    protos = list(g.node)
    replace: dict[int, list[Any]] = {}     # node index -> replacement nodes
    rename: dict[str, str] = {}            # value -> value its consumers read instead
    floats: dict[str, str] = {}            # QOperator: quantized value -> float value of its kept producer
    for k in sorted(nodes):
        node = protos[k]
        op = node.op_type
        if op.startswith(QOPERATOR) or op in NBITS_OPS:
            rep_q = (qoperator(index, node, inits, floats, _float_weight, torch_tensors, new_inits)
                     if op.startswith(QOPERATOR) else _nbits(node, inits, torch_tensors, new_inits))
            if rep_q is not None:
                replace[k] = rep_q
        elif op in ("MatMulInteger", "ConvInteger"):
            rep = _dynamic(index, k, node, inits, torch_tensors, new_inits)
            if rep is not None:
                replace[k], dead = rep
                for d in dead:
                    replace[d] = []
        elif op == "DequantizeLinear" and _producer_op(index, node.input[0]) == "QuantizeLinear":
            # an activation's QuantizeLinear -> DequantizeLinear pair: its consumers read the float value,
            # when the user's quantizer drops the pair too (its producer and readers all kept: qdq_pairs.py)
            if not pair_removed(index, k, nodes):
                continue
            pre: list[Any] = []
            src = _unrounded(index, index.nodes[index.producer[node.input[0]]], k, pre)
            replace[k] = pre + [onnx.helper.make_node("Identity", [src], [node.output[0]], name=f"{node.name}::float32")]
        elif op == "QuantizeLinear" and not is_view_node(node) and _feeds_qoperator(index, node.output[0]):
            replace[k] = kept_quantizer(node, inits, floats)
        elif op in ("DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear"):
            continue
        elif any(_producer_op(index, i) == "DequantizeLinear" for i in node.input):
            replace[k] = _qdq(index, k, node, inits, torch_tensors, new_inits, nodes)
        else:
            replace[k] = _fp16(index, k, node, nodes, inits, torch_tensors, new_inits)
    for k, dq in _dequantized_floats(index, floats):
        replace[k] = dq
    final = []
    for k, node in enumerate(protos):
        final.extend(replace.get(k, [node]))
    for node in final:
        for pos, name in enumerate(node.input):
            if name in rename:
                node.input[pos] = rename[name]
    g.initializer.extend(new_inits)
    del g.node[:]
    g.node.extend(_prune(final, [o.name for o in g.output]))
    _drop_unused_initializers(g)
    del g.value_info[:]       # types changed inside: let ORT infer them again
    return out


def unkept_ops(index: Any, nodes: set[int]) -> list[str]:
    """The op types among ``nodes`` that this patch leaves in reduced precision (no float form here:
    QLinearReduceMean, QLinearWhere, QAttention, a channels-last pool...)."""
    return sorted({index.nodes[k].op_type for k in nodes
                   if index.nodes[k].op_type.startswith((*QOPERATOR, "QAttention"))
                   and not supported(index.nodes[k].proto)})


def without_views(model: Any) -> Any:
    """A copy of a patched model without drifttui's views (qviews.py: a QOperator file's integers read
    through DequantizeLinear; reference.py: Reshape / Transpose / NCHWc round trips; numerically the
    same graph): the file written for the user, and the one a keep-list is verified on."""
    out = copy_model(model)
    nodes = _prune(strip_round_trips(strip_views(list(out.graph.node))), [o.name for o in out.graph.output])
    for n in nodes:      # what is left of a view carries a kept node's value on: named after it
        if n.name.rsplit("/", 1)[-1].startswith("drifttui_"):    # (absorbed_views': after a scope path)
            n.name = f"{n.output[0]}_{n.op_type}"
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    _drop_unused_initializers(out.graph)
    return out


def _feeds_qoperator(index: Any, value: str) -> bool:
    """Read by a QOperator op (directly or through drifttui's view of it), not by a QDQ float op."""
    return any(index.nodes[c].op_type.startswith(QOPERATOR) or is_view_node(index.nodes[c])
               for c in index.consumers.get(value, []))


def _dequantized_floats(index: Any, floats: dict[str, str]) -> list[tuple[int, list[Any]]]:
    """A DequantizeLinear of a kept QOperator node's output (the file's last one before a graph
    output, or drifttui's view of the value) reads the float value instead: what the user's
    quantizer leaves when that node is excluded."""
    import onnx

    out = []
    for n in index.nodes:
        if n.op_type != "DequantizeLinear" or not n.inputs or not n.outputs or not floats:
            continue
        pre: list[Any] = []
        f = moved_float(index, n.inputs[0], floats, pre, n.name)    # directly, or through data movement
        if f is not None:
            out.append((n.index, pre + [onnx.helper.make_node("Identity", [f], [n.outputs[0]], name=f"{n.name}::float32")]))
    return out


def _producer_op(index: Any, name: str) -> str:
    p = index.producer.get(name)
    return index.nodes[p].op_type if p is not None else ""


def _float_weight(name: str, inits: dict, torch_tensors: dict, new_inits: list, shape: Optional[list[int]] = None,
                  transpose: bool = False, scale: Optional[str] = None, zero: Optional[str] = None) -> str:
    """A float32 initializer for weight ``name`` (torch's tensor when one matches by name and size)."""
    from onnx import numpy_helper

    base = name
    for suffix in ("_quantized", "_Transposed_quantized"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    base_t = base[: -len("_Transposed")] if base.endswith("_Transposed") else base
    q = read_tensor(inits[name])
    arr = None
    if scale is not None:
        s = read_tensor(inits[scale]).astype(np.float32)
        z = read_tensor(inits[zero]).astype(np.float32) if zero in inits else np.float32(0)
        if s.ndim == 1 and q.ndim > 1:   # per-channel: along the axis whose length matches
            ax = next((a for a, d in enumerate(q.shape) if d == s.size), 0)
            shp = [1] * q.ndim
            shp[ax] = s.size
            s, z = s.reshape(shp), (z.reshape(shp) if np.ndim(z) else z)
        stored = int8_values(q, z, s)
        step = float(np.max(s))
    else:
        stored = q.astype(np.float32)
        step = float(np.max(np.abs(stored))) * 2.0 ** -9 if stored.size else 0.0
    t = torch_tensors.get(base_t)
    if t is not None and t.size == q.size:
        cand = t.astype(np.float32)
        if transpose or (base.endswith("_Transposed") and cand.ndim == 2):
            cand = cand.T
        cand = cand.reshape(q.shape)
        # only the torch tensor the file rounded (a folded BatchNorm's Conv keeps the name, not the values)
        if float(np.max(np.abs(cand - stored))) <= step + 1e-12:
            arr = cand
    if arr is None:      # renamed by the exporter (onnx::MatMul_168, val_70): by content, else the stored values
        found = rounded_source(stored, step, torch_tensors)
        arr = stored if found is None else found
    new = f"{name}::float32"
    if new not in inits:
        new_inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, dtype=np.float32), new))
        inits[new] = new_inits[-1]
    return new


def _dynamic(index: Any, k: int, node: Any, inits: dict, torch_tensors: dict,
             new_inits: list) -> Optional[tuple[list[Any], list[int]]]:
    """MatMulInteger/ConvInteger -> Cast -> Mul(scales): a float MatMul/Conv with the same output."""
    import onnx

    x_q, w_q = node.input[0], node.input[1]
    dql = index.producer.get(x_q)
    if dql is None or index.nodes[dql].op_type != "DynamicQuantizeLinear" or w_q not in inits:
        return None
    x = index.nodes[dql].inputs[0]
    cast = _only_consumer(index, node.output[0], "Cast")
    mul = _only_consumer(index, index.nodes[cast].outputs[0], "Mul") if cast is not None else None
    if mul is None:
        return None
    w_node_scale = next((i for i in index.nodes[index.producer[index.nodes[mul].inputs[1]]].inputs
                         if i in inits and i.endswith("_scale")), None) \
        if index.nodes[mul].inputs[1] in index.producer else None
    zero = node.input[3] if len(node.input) > 3 else None
    w = _float_weight(w_q, inits, torch_tensors, new_inits, scale=w_node_scale, zero=zero)
    y = index.nodes[mul].outputs[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    op = "MatMul" if node.op_type == "MatMulInteger" else "Conv"
    return [onnx.helper.make_node(op, [x, w], [y], name=f"{node.name}::float32", **attrs)], [cast, mul]


def _nbits(node: Any, inits: dict, torch_tensors: dict, new_inits: list) -> Optional[list[Any]]:
    """MatMulNBits(A, blocks, scales[, zero points][, g_idx][, bias]) -> MatMul(A, W) [+ bias]."""
    import onnx
    from onnx import numpy_helper

    arrays = {i: read_tensor(inits[i]) for i in node.input[1:4] if i and i in inits}
    w = nbits.float_weight(node, arrays, torch_tensors)
    if w is None:
        return None
    name = f"{node.input[1]}::float32"
    if name not in inits:
        new_inits.append(numpy_helper.from_array(w, name))
        inits[name] = new_inits[-1]
    y = node.output[0]
    bias = node.input[5] if len(node.input) > 5 and node.input[5] else None
    mm = onnx.helper.make_node("MatMul", [node.input[0], name], [f"{y}::mm" if bias else y],
                               name=f"{node.name}::float32")
    if bias is None:
        return [mm]
    return [mm, onnx.helper.make_node("Add", [f"{y}::mm", bias], [y], name=f"{node.name}::float32_bias")]


def _only_consumer(index: Any, value: str, op: str) -> Optional[int]:
    cs = index.consumers.get(value, [])
    return cs[0] if len(cs) == 1 and index.nodes[cs[0]].op_type == op else None


def _qdq(index: Any, k: int, node: Any, inits: dict, torch_tensors: dict, new_inits: list,
         keep: set[int]) -> list[Any]:
    """A QDQ float op reading the float values behind its DequantizeLinear inputs (its output stays
    quantized: that rounding is its consumers' input); an activation's pair only when the user's
    quantizer drops it for ``keep`` (qdq_pairs.pair_removed), else it reads the rounded value."""
    import onnx

    new = onnx.NodeProto()
    new.CopyFrom(node)
    pre: list[Any] = []
    for pos, name in enumerate(node.input):
        p = index.producer.get(name)
        if p is None or index.nodes[p].op_type != "DequantizeLinear":
            continue
        dq = index.nodes[p]
        src = dq.inputs[0]
        if src in inits:
            new.input[pos] = _float_weight(src, inits, torch_tensors, new_inits, scale=dq.inputs[1],
                                           zero=dq.inputs[2] if len(dq.inputs) > 2 else None)
            continue
        q = index.producer.get(src)
        if q is not None and index.nodes[q].op_type == "QuantizeLinear" and pair_removed(index, p, keep):
            new.input[pos] = _unrounded(index, index.nodes[q], k, pre)
    return pre + [new]


def _unrounded(index: Any, q: Any, k: int, pre: list[Any]) -> str:
    """What QuantizeLinear ``q`` quantized, without the rounding; when its zero point is the format's
    lowest value the quantizer folded a Relu into it (its range starts at 0): kept as a Relu."""
    import onnx

    x = q.inputs[0]
    zp = index.constant_tensor(q.inputs[2]) if len(q.inputs) > 2 else None
    if zp is None:
        return x
    z = tensor_array(index, q.inputs[2])
    lowest = {2: 0, 3: -128}.get(zp.data_type)
    if lowest is None or z.size == 0 or not np.all(z == lowest):
        return x
    out = f"{x}::relu::{k}"
    pre.append(onnx.helper.make_node("Relu", [x], [out], name=f"{out}::node"))
    return out


def _fp16(index: Any, k: int, node: Any, keep: set[int], inits: dict, torch_tensors: dict,
          new_inits: list) -> list[Any]:
    """A float16 node computing in float32: Casts in, Casts out for consumers outside ``keep``."""
    import onnx
    from onnx import numpy_helper

    new = onnx.NodeProto()
    new.CopyFrom(node)
    pre: list[Any] = []
    for pos, name in enumerate(node.input):
        if not name:
            continue
        if name in inits and inits[name].data_type in LOW_FLOAT_ELEMS:
            new.input[pos] = _float_weight(name, inits, torch_tensors, new_inits)
        elif index.elem_types.get(name) in LOW_FLOAT_ELEMS:
            p = index.producer.get(name)
            if p is not None and p in keep:
                new.input[pos] = f"{name}::float32"
            else:
                cast = f"{name}::to_float32::{k}"
                pre.append(onnx.helper.make_node("Cast", [name], [cast], to=FLOAT, name=f"{cast}::node"))
                new.input[pos] = cast
    for a in new.attribute:
        if node.op_type == "Cast" and a.name == "to" and a.i in LOW_FLOAT_ELEMS:
            a.i = FLOAT
        elif a.HasField("t") and a.t.data_type in LOW_FLOAT_ELEMS:     # a Constant's / ConstantOfShape's value
            a.t.CopyFrom(numpy_helper.from_array(read_tensor(a.t).astype(np.float32), a.t.name))
    post: list[Any] = []
    for pos, o in enumerate(node.output):
        if not o or index.elem_types.get(o) not in LOW_FLOAT_ELEMS:
            continue
        wide = f"{o}::float32"
        new.output[pos] = wide
        post.append(onnx.helper.make_node("Cast", [wide], [o], to=index.elem_types[o], name=f"{o}::back"))
    return pre + [new] + post


def _prune(nodes: list[Any], outputs: list[str]) -> list[Any]:
    """Drop nodes none of whose outputs is used (walking back from the graph outputs)."""
    needed = set(outputs)
    keep = [False] * len(nodes)
    for k in range(len(nodes) - 1, -1, -1):
        n = nodes[k]
        if any(o in needed for o in n.output):
            keep[k] = True
            needed.update(i for i in used_names(n) if i)      # subgraphs' outer-scope reads, any depth
    return [n for n, kk in zip(nodes, keep) if kk]


def _drop_unused_initializers(g: Any) -> None:
    used = {i for n in g.node for i in used_names(n)} | {o.name for o in g.output}
    kept = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept)
    inputs = [i for i in g.input if i.name not in {t.name for t in kept} or True]
    del g.input[:]
    g.input.extend(inputs)
