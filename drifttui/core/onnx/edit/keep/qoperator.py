"""Keep a QOperator node (QLinearConv, QLinearMatMul, QGemm, QLinearAdd...) in float32: a graph patch.

onnxruntime.quantization's QOperator format has no float value between its quantized ops: each
QLinear* node reads (x, x_scale, x_zero_point) triples and writes an integer output at its own
output scale and zero point.  Kept in float32 the node becomes

    DequantizeLinear on each quantized activation input (the node's own scale / zero point inputs)
    -> the float op (Conv, MatMul, Gemm, Add...) with float32 weights: the model's (torch) tensor
       where the quantized initializer is a rounded copy of it, else the initializer dequantized
    -> QuantizeLinear back to the node's output scale / zero point,

so the rest of the graph reads what it read before.  A kept node whose producer is kept too reads
the producer's float value directly (no rounding between them), as the user's quantizer does for
two neighbouring nodes in ``nodes_to_exclude``; a Relu the quantizer folded into the producer's
output range (zero point at the type's lowest value: the range starts at 0) is kept as a Relu.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.base.dtypes import INT8_ELEMS, ONNX_ELEM
from drifttui.core.onnx.qdq_pairs import rounding_producers
from drifttui.core.onnx.qviews import QOPERATOR, is_view_node
from drifttui.core.onnx.weights import read_tensor

# op -> (float op, positions of its (x, scale, zero point) data triples, position of the output
# (scale, zero point) pair, bias position); attributes copied except those listed in _DROP
_OPS: dict[str, tuple[str, tuple[int, ...], Optional[int], Optional[int]]] = {
    "QLinearConv": ("Conv", (0, 3), 6, 8),
    "QLinearMatMul": ("MatMul", (0, 3), 6, None),
    "QGemm": ("Gemm", (0, 3), 7, 6),
    "QLinearAdd": ("Add", (0, 3), 6, None),
    "QLinearMul": ("Mul", (0, 3), 6, None),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", (0,), 3, None),
    "QLinearAveragePool": ("AveragePool", (0,), 3, None),
    "QLinearSigmoid": ("Sigmoid", (0,), 3, None),
    "QLinearLeakyRelu": ("LeakyRelu", (0,), 3, None),
    "QLinearSoftmax": ("Softmax", (0,), 3, None),
}
_DROP = {"channels_last", "opset"}
_MOVES = {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose"}


def unit(index: Any, budgets: dict, call: int) -> list[int]:
    """The calls to keep in float32 together with ``call`` for its reduced nodes to read float values:
    ``call`` and, in a QOperator file, the calls whose quantized outputs it reads (the rounding of a
    value between two QOperator nodes goes away only when both are kept, as with the user's
    quantizer: excluding the reader alone leaves a DequantizeLinear of the rounded value); in a QDQ
    file likewise the calls of the quantized ops whose rounded outputs it reads (qdq_pairs.py)."""
    owner = {k: c for c, b in budgets.items() for k in b.node_ids}
    out = [call]
    for k in budgets[call].node_ids:
        n = index.nodes[k]
        if not (is_view_node(n) and n.op_type == "QuantizeLinear"):
            continue
        d = index.producer.get(n.inputs[0])
        p = index.producer.get(index.nodes[d].inputs[0]) if d is not None else None
        c = owner.get(p) if p is not None else None
        if c is not None and c not in out and index.nodes[p].op_type.startswith(QOPERATOR):
            out.append(c)
    for p in rounding_producers(index, budgets[call].node_ids):     # QDQ: the pair goes only with both
        c = owner.get(p)
        if c is not None and c not in out:
            out.append(c)
    return out


def supported(node: Any) -> bool:
    if node.op_type == "QLinearConcat":
        return True
    if node.op_type not in _OPS:
        return False
    return not any(a.name == "channels_last" and a.i for a in node.attribute)


def qoperator(index: Any, node: Any, inits: dict, floats: dict[str, str],
              float_weight: Callable[..., str], torch_tensors: dict, new_inits: list) -> Optional[list[Any]]:
    """The float replacement of QOperator ``node`` (None: an op this patch does not know).  ``floats``
    maps a quantized value to its float value when its producer is kept (filled here)."""
    import onnx

    if not supported(node):
        return None
    ins = list(node.input)
    if node.op_type == "QLinearConcat":
        fop, triples, out_pos, bias = "Concat", tuple(range(2, len(ins), 3)), None, None
    else:
        fop, triples, out_pos, bias = _OPS[node.op_type]
    pre: list[Any] = []
    f_in: list[str] = []
    for pos in triples:
        if pos >= len(ins) or not ins[pos]:
            continue
        x, s, z = ins[pos], ins[pos + 1], ins[pos + 2] if pos + 2 < len(ins) else ""
        if x in inits:
            f_in.append(float_weight(x, inits, torch_tensors, new_inits, scale=s, zero=z or None))
        else:
            f_in.append(_float_input(index, x, s, z, floats, pre, node.name))
    if bias is not None and bias < len(ins) and ins[bias] in inits and len(triples) > 1:
        f_in.append(_float_bias(ins[bias], ins[triples[0] + 1], ins[triples[1] + 1], inits, torch_tensors,
                                new_inits))
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute if a.name not in _DROP}
    if node.op_type == "QGemm":
        attrs.pop("beta", None)
    y = node.output[0]
    if node.op_type == "QLinearConcat":
        out_s, out_z = ins[0], ins[1]
    elif out_pos is not None and out_pos < len(ins) and ins[out_pos]:
        out_s, out_z = ins[out_pos], ins[out_pos + 1] if out_pos + 1 < len(ins) else ""
    else:                 # QGemm without an output scale: a float output already
        return pre + [onnx.helper.make_node(fop, f_in, [y], name=f"{node.name}::float32", **attrs)]
    y_f = f"{y}::float32"
    nodes = pre + [onnx.helper.make_node(fop, f_in, [y_f], name=f"{node.name}::float32", **attrs),
                   onnx.helper.make_node("QuantizeLinear", [y_f, out_s, out_z] if out_z else [y_f, out_s], [y],
                                         name=f"{node.name}::requantize")]
    floats[y] = _relu_if_folded(y_f, out_z, inits, nodes)
    return nodes


def kept_quantizer(node: Any, inits: dict, floats: dict[str, str]) -> list[Any]:
    """A QuantizeLinear of the file kept with its readers (a graph input's quantizer): kept readers
    read the float value it quantized (a Relu when its range starts at 0), as the user's quantizer
    leaves that input float when its readers are excluded.  Returns the nodes that replace it."""
    out: list[Any] = [node]
    zero = node.input[2] if len(node.input) > 2 else ""
    floats[node.output[0]] = _relu_if_folded(node.input[0], zero, inits, out)
    return out


def _float_input(index: Any, x: str, s: str, z: str, floats: dict[str, str], pre: list[Any], owner: str) -> str:
    """The float value of quantized activation ``x``: its kept producer's (through data movement:
    a Flatten between a pool and a QGemm, a Reshape and a Transpose before a QLinearMatMul), else
    dequantized."""
    import onnx

    f = moved_float(index, x, floats, pre, owner)
    if f is not None:
        return f
    out = f"{x}::dequantized::{owner}"
    pre.append(onnx.helper.make_node("DequantizeLinear", [x, s, z] if z else [x, s], [out], name=f"{out}::node"))
    return out


def moved_float(index: Any, x: str, floats: dict[str, str], pre: list[Any], owner: str, hops: int = 4) -> Optional[str]:
    """The float counterpart of ``x`` when a kept producer's float value reaches it through data
    movement only (the same moves replayed on the float value); None otherwise."""
    import onnx

    src = _view_source(index, x)
    if src in floats:
        return floats[src]
    p = index.producer.get(src)
    if hops == 0 or p is None or index.nodes[p].op_type not in _MOVES or not index.nodes[p].inputs:
        return None
    n = index.nodes[p]
    inner = moved_float(index, n.inputs[0], floats, pre, owner, hops - 1)
    if inner is None:
        return None
    out = f"{src}::float32::{owner}"
    if out not in {o for m in pre for o in m.output}:
        pre.append(onnx.helper.make_node(n.op_type, [inner, *n.inputs[1:]], [out], name=f"{out}::node",
                                         **{a.name: onnx.helper.get_attribute_value(a) for a in n.proto.attribute}))
    return out


def _view_source(index: Any, x: str) -> str:
    """The quantized value ``x`` stands for: itself, or the value behind drifttui's own
    DequantizeLinear -> QuantizeLinear round trip (qviews.py) that its reader reads."""
    p = index.producer.get(x)
    if p is None or not is_view_node(index.nodes[p]) or index.nodes[p].op_type != "QuantizeLinear":
        return x
    d = index.producer.get(index.nodes[p].inputs[0])
    return index.nodes[d].inputs[0] if d is not None and is_view_node(index.nodes[d]) else x


def _relu_if_folded(y_f: str, zero: str, inits: dict, nodes: list[Any]) -> str:
    """The quantizer folds a Relu into its producer's output range (a zero point at the type's
    lowest value): the float value flowing on to a kept reader gets that Relu back."""
    import onnx

    zp = inits.get(zero) if zero else None
    if zp is None or zp.data_type not in INT8_ELEMS:
        return y_f
    z = read_tensor(zp)
    if z.size == 0 or not np.all(z == np.iinfo(ONNX_ELEM[zp.data_type]).min):
        return y_f
    nodes.append(onnx.helper.make_node("Relu", [y_f], [f"{y_f}::relu"], name=f"{y_f}::relu::node"))
    return f"{y_f}::relu"


def _float_bias(name: str, x_scale: str, w_scale: str, inits: dict, torch_tensors: dict, new_inits: list) -> str:
    """An int32 bias (scale x_scale * w_scale, zero point 0) as float32: torch's when it rounds to it."""
    from onnx import numpy_helper

    new = f"{name}::float32"
    if new in inits:
        return new
    q = read_tensor(inits[name]).astype(np.float64)
    s = read_tensor(inits[x_scale]).astype(np.float64) * read_tensor(inits[w_scale]).astype(np.float64)
    stored = (q * s.reshape(-1) if s.size == q.size else q * s).astype(np.float32)
    base = name[: -len("_quantized")] if name.endswith("_quantized") else name
    t = torch_tensors.get(base)
    arr = stored
    if t is not None and t.size == stored.size:
        cand = t.astype(np.float32).reshape(stored.shape)
        if float(np.max(np.abs(cand - stored))) <= float(np.max(s)) + 1e-12:
            arr = cand
    new_inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, dtype=np.float32), new))
    inits[new] = new_inits[-1]
    return new
