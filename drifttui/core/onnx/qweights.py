"""The (u)int8 weights of a quantized file, with the scale and zero point that turn them back into floats.

A reader takes a quantized weight in one of two ways:
- as a ``(w, scale, zero point)`` triple, side by side in its inputs: ``DequantizeLinear`` (QDQ files,
  a quantized embedding table) and every QOperator op (QLinearConv, QLinearMatMul, QGemm...);
- ``quantize_dynamic``'s ``MatMulInteger`` / ``ConvInteger`` take ``(x, w, x zero point, w zero point)``
  and the scale comes after the integer product: ``Cast`` -> ``Mul`` by ``x_scale * w_scale`` (a ``Mul``
  of the activation's run-time scale and the weight's scale initializer).  The weight's scale is the
  float initializer of that product's ``Mul``.

``int8_weights(index)`` yields each one once, dequantized with its reader's scale and zero point (per
tensor, or per channel along the axis of the scale's length), and the scale broadcast to the weight:
one rounding step per element.  ``low_precision_weights(index)`` does the same for float16 / bfloat16
weights (a float16 converter's initializers): one unit in the last place per element.
``nbits_weights(index)``: each MatMulNBits node's packed block weight (int4 weight-only), dequantized to
its K x N float weight with its block scales and zero points, its block's scale as each element's step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np

from drifttui.core.base.dtypes import INT8_ELEMS, LOW_PRECISION_ELEM
from drifttui.core.onnx.graph import tensor_array
from drifttui.core.onnx.nbits import NBITS_OPS, block_steps, dequantized

INTEGER_OPS = ("MatMulInteger", "ConvInteger")
FLOAT = 1
_SKIP = ("MatMulNBits", "DynamicQuantizeLSTM")      # packed blocks / gates: not (w, scale, zero point)


@dataclass
class QWeight:
    name: str             # the int8 initializer (or Constant value)
    reader: int           # the node reading it
    scale: str            # the scale initializer its reader dequantizes it with
    values: np.ndarray    # (q - zero point) * scale, float32, the initializer's layout
    step: np.ndarray      # the scale broadcast to ``values``: one rounding step per element
    zero: Optional[np.ndarray] = None   # the zero point broadcast to ``values`` (None: a float16 weight)
    scale_of: Optional[np.ndarray] = None   # the signed scale broadcast to ``values``
    packed: bool = False  # a MatMulNBits block weight: ``values`` is its dequantized K x N, not its layout

    def requantized(self, t: np.ndarray, dtype: Any) -> np.ndarray:
        """``t`` (a float tensor in this weight's layout) on this weight's own grid: rounded with its
        reader's scale and zero point and clipped to ``dtype``, or rounded to ``dtype`` (a float16 weight)."""
        if self.zero is None or self.scale_of is None:
            return t.astype(dtype)
        info = np.iinfo(dtype)
        return np.clip(np.round(t / self.scale_of) + self.zero, info.min, info.max).astype(dtype)


def _arr(index: Any, name: str) -> Optional[np.ndarray]:
    """The constant ``name``'s values, read where they lie (an initializer in the file's external data too)."""
    return tensor_array(index, name) if name and index.constant_tensor(name) is not None else None


def _triple(index: Any, node: Any, name: str) -> Optional[tuple[str, str]]:
    """The (scale, zero point) names a triple reader takes ``name`` with, or None."""
    ins = node.inputs
    pos = ins.index(name)
    if pos + 2 >= len(ins):
        return None
    s, z = index.constant_tensor(ins[pos + 1]), index.constant_tensor(ins[pos + 2])
    t = index.constant_tensor(name)
    if s is None or z is None or s.data_type != FLOAT or z.data_type != t.data_type:
        return None
    return ins[pos + 1], ins[pos + 2]


def _integer_scale(index: Any, node: Any) -> Optional[str]:
    """The weight scale of a MatMulInteger / ConvInteger: the float initializer multiplied into the
    integer product after its Cast (directly, or through the Mul of x_scale and w_scale)."""
    seen, value = 0, node.outputs[0]
    while seen < 3:
        readers = index.consumers.get(value, [])
        if len(readers) != 1:
            return None
        r = index.nodes[readers[0]]
        if r.op_type == "Cast":
            value, seen = r.outputs[0], seen + 1
            continue
        if r.op_type != "Mul":
            return None
        other = next((i for i in r.inputs if i != value), None)
        if other is None:
            return None
        if index.constant_tensor(other) is not None:
            return other if index.constant_tensor(other).data_type == FLOAT else None
        p = index.producer.get(other)
        if p is None or index.nodes[p].op_type != "Mul":
            return None
        consts = [i for i in index.nodes[p].inputs if index.constant_tensor(i) is not None
                  and index.constant_tensor(i).data_type == FLOAT]
        return consts[0] if len(consts) == 1 else None
    return None


def _channel_axis(node: Any, ndim: int) -> Optional[int]:
    """The axis a reader's per-channel scale runs along, where the op says it (a square weight has two
    axes of the scale's length): DequantizeLinear's ``axis``; a QLinearConv's output channels; a
    QLinearMatMul's columns; a QGemm's by its ``transB``."""
    attrs = {a.name: a for a in getattr(node.proto, "attribute", [])}
    if node.op_type == "DequantizeLinear":
        ax = attrs["axis"].i if "axis" in attrs else 1
        return ax + ndim if ax < 0 else ax
    if node.op_type == "QLinearConv":
        return 0
    if node.op_type == "QLinearMatMul":
        return ndim - 1
    if node.op_type == "QGemm":
        return 0 if "transB" in attrs and attrs["transB"].i else 1
    return None


_F32_MAX = float(np.finfo(np.float32).max)


def int8_values(q: np.ndarray, z: Any, s: Any) -> np.ndarray:
    """``(q - z) * s`` as float32, computed in float64 and held to float32's finite range: a quantized
    mask (``finfo.min`` in a causal mask: its scale is ~1e36) stores the float32 extreme, not an
    overflow to inf that no tensor of the model holds."""
    v = (np.asarray(q, np.float64) - np.asarray(z, np.float64)) * np.asarray(s, np.float64)
    return np.clip(v, -_F32_MAX, _F32_MAX).astype(np.float32)


def _dequantize(q: np.ndarray, s: np.ndarray, z: np.ndarray,
                axis: Optional[int] = None) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    q, s, z = q.astype(np.float32), s.astype(np.float32), z.astype(np.float32)
    if s.ndim == 1 and s.size > 1:       # per channel: the reader's axis, else the axis of that length (0 first)
        ax = axis if axis is not None and axis < q.ndim and q.shape[axis] == s.size else \
            next((a for a, d in enumerate(q.shape) if d == s.size), None)
        if ax is None:
            return None
        shp = [1] * q.ndim
        shp[ax] = s.size
        s, z = s.reshape(shp), z.reshape(shp) if z.size == s.size else z
    try:
        return (int8_values(q, z, s), np.broadcast_to(np.abs(s), q.shape), np.broadcast_to(z, q.shape),
                np.broadcast_to(s, q.shape))
    except ValueError:       # a scale laid out another way (per gate, per direction...)
        return None


def int8_weights(index: Any, integer_ops: bool = True) -> Iterator[QWeight]:
    """Every 2-D-or-more (u)int8 constant tensor some reader dequantizes, once (its first such reader).
    ``integer_ops``: also MatMulInteger / ConvInteger weights (scale found after the product)."""
    for name, t in index.constant_tensors().items():
        if t.data_type not in INT8_ELEMS or len(t.dims) < 2:
            continue
        for c in index.consumers.get(name, []):
            node = index.nodes[c]
            if node.op_type in _SKIP:
                break
            if node.op_type in INTEGER_OPS:
                if not integer_ops or node.inputs[1:2] != [name]:
                    continue
                scale = _integer_scale(index, node)
                zero = node.inputs[3] if len(node.inputs) > 3 else ""
                z = _arr(index, zero) if zero else np.zeros((), np.float32)
            else:
                pair = _triple(index, node, name)
                if pair is None:
                    continue
                scale, zero = pair
                z = _arr(index, zero)
            s = _arr(index, scale) if scale else None
            if s is None or z is None:
                continue
            got = _dequantize(_arr(index, name), s, z, _channel_axis(node, len(t.dims)))
            if got is not None:
                yield QWeight(name, c, scale, got[0], got[1], got[2], got[3])
            break


def low_precision_weights(index: Any) -> Iterator[QWeight]:
    """Every 2-D-or-more float16 / bfloat16 constant tensor some node reads, widened to float32, with one
    unit in the last place of each element as its step (its rounding is half of that)."""
    for name, t in index.constant_tensors().items():
        eps = LOW_PRECISION_ELEM.get(t.data_type)
        readers = index.consumers.get(name, [])
        if eps is None or len(t.dims) < 2 or not readers:
            continue
        a = _arr(index, name)
        if a is None or a.dtype.kind != "f":       # bfloat16 without a float numpy type: not compared
            continue
        v = a.astype(np.float32)
        yield QWeight(name, readers[0], "", v, np.maximum(np.abs(v) * eps, 2.0 ** -24).astype(np.float32))


def nbits_weights(index: Any) -> Iterator[QWeight]:
    """Every MatMulNBits node's weight whose blocks and scales are in the file, dequantized (K x N), with
    its block's scale as each element's step."""
    for node in index.nodes:
        if node.op_type not in NBITS_OPS or len(node.inputs) < 3:
            continue
        arrays = {i: a for i in node.inputs[1:4] if i and (a := _arr(index, i)) is not None}
        w = dequantized(node, arrays)
        step = block_steps(node, arrays)
        if w is not None and step is not None:
            yield QWeight(node.inputs[1], node.index, node.inputs[2], w, step, packed=True)


def rounded_source(stored: np.ndarray, step: float, torch_tensors: dict) -> Optional[np.ndarray]:
    """The torch tensor ``stored`` is a rounded copy of (every element within ``step``, as stored or
    transposed), by content; None when no tensor, or more than one, is."""
    found = []
    for t in torch_tensors.values():
        if t.size != stored.size:
            continue
        for cand in (t, t.T) if t.ndim == 2 else (t,):
            if cand.size == stored.size and (cand.shape == stored.shape or cand.ndim != 2):
                c = cand.astype(np.float32).reshape(stored.shape)
                if float(np.max(np.abs(c - stored))) <= step + 1e-12:
                    found.append(c)
                    break
    return found[0] if len(found) == 1 else None
