"""The int8 kernel's fixes as patches on a copy: the file's int8 weights re-quantized to 7 bits.

``quantize_dynamic(..., reduce_range=True)`` / ``quantize_static(..., reduce_range=True)`` quantize
the weights to 7 bits (ONNX Runtime: symmetric int8 weights in [-64, 64]): a pair of uint8 x int8
products is then at most 2 x 255 x 64 = 32640 and fits the 16-bit sums of VPMADDUBSW (no saturation
on a CPU without VNNI).  ``reduce_range`` makes that copy of the user's file: every int8 weight of a
u8s8 product (MatMulInteger, ConvInteger, DynamicQuantizeLSTM, QLinearConv, QLinearMatMul, QGemm and
the weights a QDQ file's DequantizeLinear feeds to a Conv / MatMul / Gemm) re-quantized from the
float weight (torch's tensor where the file holds a rounded copy of it, else the file's own values
dequantized) at scale max|w| / 64, per tensor or per channel like the file; the int32 biases that
follow the weight's scale (QLinearConv's, QGemm's, a QDQ Conv's) are re-quantized with it.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.graph import ReadInitializers
from drifttui.core.onnx.weights import read_tensor

RANGE7 = 64            # reduce_range's symmetric int8 weight range: [-64, 64]
# op -> (weight input, its scale, its zero point, an int32 bias following x_scale * w_scale, x_scale)
U8S8 = {"MatMulInteger": (1, None, 3, None, None), "ConvInteger": (1, None, 3, None, None),
        "QLinearConv": (3, 4, 5, 8, 1), "QLinearMatMul": (3, 4, 5, None, 1), "QGemm": (3, 4, 5, 6, 1)}
LSTM_WEIGHTS = ((1, 8, 9), (2, 10, 11))          # DynamicQuantizeLSTM: (W, W_scale, W_zp), (R, R_scale, R_zp)
QDQ_READERS = {"Conv": (1, 2), "MatMul": (1, None), "Gemm": (1, 2)}   # weight input, bias input


def weight_nodes(index: Any) -> list[int]:
    """The nodes whose int8 weight a u8s8 kernel multiplies (what reduce_range re-quantizes)."""
    out = []
    for n in index.nodes:
        if n.op_type in U8S8 or n.op_type == "DynamicQuantizeLSTM":
            out.append(n.index)
        elif n.op_type in QDQ_READERS and _qdq_weight(index, n) is not None:
            out.append(n.index)
    return out


def reduce_range(model: Any, index: Any, nodes: Optional[set[int]] = None,
                 torch_tensors: Optional[dict[str, np.ndarray]] = None) -> tuple[Any, list[str]]:
    """A copy of ``model`` whose u8s8 weights (of ``nodes``, default all) are 7-bit; and the nodes changed."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    inits = ReadInitializers(index, out.graph)
    done: dict[str, tuple[np.ndarray, np.ndarray]] = {}   # weight -> (old, new) scale (shared weights once)
    changed = []
    for k in sorted(weight_nodes(index) if nodes is None else nodes):
        node = index.nodes[k]
        triples = _triples(index, node)
        if not triples:
            continue
        for w, s, z, bias, xs in triples:
            if w not in inits or s not in inits or inits[w].data_type != 3:      # int8 weights only
                continue
            if w not in done:
                done[w] = _requantize(inits, w, s, z, torch_tensors or {})
            if bias and xs and bias.partition("|")[0] in inits and xs in inits:
                _rescale_bias(inits, bias, xs, *done[w])
        changed.append(node.name)
    return out, changed


def _triples(index: Any, node: Any) -> list[tuple[str, str, Optional[str], Optional[str], Optional[str]]]:
    """(weight, scale, zero point, int32 bias, x scale) initializer names of ``node``'s int8 weights."""
    ins = list(node.inputs) + [""] * 12
    op = node.op_type
    if op == "DynamicQuantizeLSTM":
        return [(ins[w], ins[s], ins[z] or None, None, None) for w, s, z in LSTM_WEIGHTS if ins[w] and ins[s]]
    if op in ("MatMulInteger", "ConvInteger"):
        scale = _dynamic_scale(index, node)
        return [(ins[1], scale, ins[3] or None, None, None)] if scale else []
    if op in U8S8:
        w, s, z, b, xs = U8S8[op]
        return [(ins[w], ins[s], ins[z] or None, ins[b] if b is not None else None, ins[xs])]
    dq = _qdq_weight(index, node)
    if dq is None:
        return []
    d = index.nodes[dq]
    bias, xs = None, None
    b_in = QDQ_READERS[op][1]
    if b_in is not None and len(node.inputs) > b_in and node.inputs[b_in]:
        bp = index.producer.get(node.inputs[b_in])
        if bp is not None and index.nodes[bp].op_type == "DequantizeLinear":
            bias = index.nodes[bp].inputs[0]
            xdq = index.producer.get(node.inputs[0])
            xs = index.nodes[xdq].inputs[1] if xdq is not None and index.nodes[xdq].op_type == "DequantizeLinear" \
                else None
            bias = f"{bias}|{index.nodes[bp].inputs[1]}" if xs else None     # the int32 bias and its scale
    return [(d.inputs[0], d.inputs[1], d.inputs[2] if len(d.inputs) > 2 else None, bias, xs)]


def _qdq_weight(index: Any, node: Any) -> Optional[int]:
    """The DequantizeLinear feeding ``node``'s weight input from an int8 initializer (QDQ format)."""
    w_in = QDQ_READERS.get(node.op_type, (None,))[0]
    if w_in is None or len(node.inputs) <= w_in:
        return None
    p = index.producer.get(node.inputs[w_in])
    if p is None or index.nodes[p].op_type != "DequantizeLinear":
        return None
    t = index.initializers.get(index.nodes[p].inputs[0])
    return p if t is not None and t.data_type == 3 else None


def _dynamic_scale(index: Any, node: Any) -> Optional[str]:
    """quantize_dynamic's weight scale: the initializer the output's Mul(x_scale, w_scale) reads at the weight's
    place.  Where both scales are initializers (a constant first operand quantized once: DeBERTa's relative
    embeddings through pos_key_proj) the first is the operand's, not the weight's: re-quantizing the weight by it
    would rewrite the operand's scale and corrupt both."""
    for c in index.consumers.get(node.outputs[0], []):
        if index.nodes[c].op_type != "Cast":
            continue
        for m in index.consumers.get(index.nodes[c].outputs[0], []):
            mul = index.nodes[m]
            if mul.op_type != "Mul":
                continue
            for i in mul.inputs:
                p = index.producer.get(i)
                if p is not None and index.nodes[p].op_type == "Mul":
                    scales = list(index.nodes[p].inputs)
                    if len(scales) == 2 and all(x in index.initializers for x in scales):
                        return scales[1]
                    s = next((x for x in scales if x in index.initializers), None)
                    if s is not None:
                        return s
    return None


def _requantize(inits: dict, w: str, s: str, z: Optional[str],
                torch_tensors: dict) -> tuple[np.ndarray, np.ndarray]:
    """Re-quantize weight ``w`` in place to [-64, 64] at max|w| / 64 (per channel like its scale):
    (its old scale, its new one)."""
    from onnx import numpy_helper

    q = read_tensor(inits[w]).astype(np.float32)
    scale = read_tensor(inits[s]).astype(np.float32)
    zero = read_tensor(inits[z]).astype(np.float32) if z and z in inits else np.float32(0)
    axis = _axis(q, scale)
    shp = [1] * q.ndim
    if axis is not None:
        shp[axis] = scale.size
    sb = scale.reshape(shp) if axis is not None else scale
    zb = zero.reshape(shp) if axis is not None and np.ndim(zero) else zero
    wf = _float_values(w, (q - zb) * sb, float(np.max(scale)), torch_tensors)
    red = tuple(a for a in range(q.ndim) if a != axis)
    m = np.max(np.abs(wf), axis=red, keepdims=True) if axis is not None else np.max(np.abs(wf))
    new_scale = np.where(m > 0, m / RANGE7, 1.0).astype(np.float32)
    q7 = np.clip(np.rint(wf / new_scale), -RANGE7, RANGE7).astype(np.int8)
    inits[w].CopyFrom(numpy_helper.from_array(q7, w))
    if z and z in inits:
        inits[z].CopyFrom(numpy_helper.from_array(np.zeros_like(read_tensor(inits[z])), z))
    flat = new_scale.reshape(scale.shape) if axis is not None else np.asarray(new_scale, np.float32).reshape(scale.shape)
    inits[s].CopyFrom(numpy_helper.from_array(flat.astype(np.float32), s))
    return scale, flat.astype(np.float32)


def _rescale_bias(inits: dict, bias: str, xs: str, old_ws: np.ndarray, new_ws: np.ndarray) -> None:
    """An int32 bias at x_scale * w_scale, re-quantized for the new weight scale ("name|scale" in QDQ)."""
    from onnx import numpy_helper

    name, _, own_scale = bias.partition("|")
    if name not in inits or inits[name].data_type != 6:
        return
    x_s = read_tensor(inits[xs]).astype(np.float64)
    old = (read_tensor(inits[own_scale]).astype(np.float64) if own_scale
           else x_s * old_ws.astype(np.float64))
    b = read_tensor(inits[name]).astype(np.float64) * np.broadcast_to(old.reshape(-1), \
        read_tensor(inits[name]).shape)
    new = (x_s * new_ws.astype(np.float64)).reshape(-1)
    inits[name].CopyFrom(numpy_helper.from_array(np.rint(b / np.broadcast_to(new, b.shape)).astype(np.int32), name))
    if own_scale:
        inits[own_scale].CopyFrom(numpy_helper.from_array(
            np.broadcast_to(new, read_tensor(inits[own_scale]).shape).astype(np.float32).copy(), own_scale))


def _axis(q: np.ndarray, scale: np.ndarray) -> Optional[int]:
    if scale.size <= 1:
        return None
    return next((a for a, d in enumerate(q.shape) if d == scale.size), None)


def _float_values(w: str, stored: np.ndarray, step: float, torch_tensors: dict) -> np.ndarray:
    """torch's tensor of the same name when the file holds a rounded copy of it, else ``stored``."""
    base = w
    for suffix in ("_quantized", "_Transposed"):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    t = torch_tensors.get(base)
    if t is not None and t.size == stored.size:
        cand = t.astype(np.float32)
        cand = cand.T.reshape(stored.shape) if w.endswith("_Transposed_quantized") and cand.ndim == 2 \
            else cand.reshape(stored.shape)
        if float(np.max(np.abs(cand - stored))) <= step + 1e-12:
            return cand
    return stored

