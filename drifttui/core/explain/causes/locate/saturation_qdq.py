"""The exact product of a QDQ file's quantized Conv / MatMul / Gemm, against ONNX Runtime's.

ONNX Runtime fuses DequantizeLinear -> Conv -> QuantizeLinear into a QLinearConv (above level
"disable": what a deployment runs), whose integer product is the u8s8 kernel's (an int8 activation is
run as uint8: QDQS8ToU8).  Marking a value inside the file as an output stops that fusion, so each
unit is cut out alone (``unit_model``: from the float value its QuantizeLinear reads, fed what the file
computes there on the sample) and run at the deployment's level: ORT fuses it as in the file.  Its
output is requantized, so the exact value is recomputed the same way from the file's integers: ``acc = sum (x - x_zero)(w - w_zero)`` in int64, plus the bias, times
``x_scale * w_scale / y_scale``, rounded half to even, plus ``y_zero``, clipped.  The float
multiplication may round the other way at a half: ORT's output differing by 1 is that; by 2 or more
steps it is not the exact product (saturation.py's NodeProduct, ``requantized``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.saturation import MAX_ELEMENTS, NodeProduct, im2col
from drifttui.core.onnx.graph import tensor_array, with_data

READERS = ("Conv", "MatMul", "Gemm")
UNIT_OUT = "drifttui_unit_out"
MAX_UNITS = 64           # units recomputed per file (one small ORT session each), in graph order
TOLERATED = 1            # requantization steps a float multiplication may round differently


@dataclass(frozen=True)
class QdqProduct:
    node: int
    x_f: str                 # the float value the file's QuantizeLinear rounds to x_q
    x_q: str                 # the quantized activation (the QuantizeLinear output the DequantizeLinear reads)
    x_scale: str
    x_zero: str
    w_q: str
    w_scale: str
    w_zero: str
    bias: Optional[str]      # the float bias value (a DequantizeLinear's output or an initializer)
    y_q: str                 # the QuantizeLinear output after the node
    y_scale: str
    y_zero: str


def qdq_products(index: Any) -> list[QdqProduct]:
    """The file's QuantizeLinear -> DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear units with
    an int8 weight (the first MAX_UNITS)."""
    out: list[QdqProduct] = []
    for n in index.nodes:
        if len(out) >= MAX_UNITS:
            break
        if n.op_type not in READERS or len(n.inputs) < 2 or len(n.outputs) != 1:
            continue
        x, w = (_dq(index, n.inputs[0]), _dq(index, n.inputs[1]))
        readers = index.consumers.get(n.outputs[0], [])
        if x is None or w is None or len(readers) != 1 or index.nodes[readers[0]].op_type != "QuantizeLinear":
            continue
        if w.inputs[0] not in index.initializers or index.initializers[w.inputs[0]].data_type != 3:
            continue
        if x.inputs[0] in index.initializers or len(x.inputs) < 3 or len(w.inputs) < 3:
            continue
        xq = index.producer.get(x.inputs[0])
        if xq is None or index.nodes[xq].op_type != "QuantizeLinear":
            continue
        q = index.nodes[readers[0]]
        if len(q.inputs) < 3 or any(i not in index.initializers for i in (*x.inputs[1:3], *w.inputs[1:3], *q.inputs[1:3])):
            continue
        bias = n.inputs[2] if len(n.inputs) > 2 and n.inputs[2] else None
        out.append(QdqProduct(n.index, index.nodes[xq].inputs[0], x.inputs[0], x.inputs[1], x.inputs[2], w.inputs[0], w.inputs[1], w.inputs[2],
                              bias, q.outputs[0], q.inputs[1], q.inputs[2]))
    return out


def _dq(index: Any, value: str) -> Any:
    p = index.producer.get(value)
    return index.nodes[p] if p is not None and index.nodes[p].op_type == "DequantizeLinear" else None


def values_needed(units: list[QdqProduct]) -> list[str]:
    """The activations the units read, float and quantized (the file run at level "disable", marked)."""
    return list(dict.fromkeys(v for u in units for v in (u.x_f, u.x_q)))


def unit_model(index: Any, u: QdqProduct, shape: Optional[list[int]] = None) -> Any:
    """QuantizeLinear -> DequantizeLinear(s) -> the node -> QuantizeLinear alone, x_f its input (ORT
    runs an int8 activation as uint8 only from a QuantizeLinear it can rewrite: QDQS8ToU8)."""
    import onnx

    keep, todo = [], [u.node]
    while todo:                       # the node and the DequantizeLinear / constant chains feeding it
        k = todo.pop()
        if k in keep:
            continue
        keep.append(k)
        for i in index.nodes[k].inputs:
            p = index.producer.get(i)
            if i and i != u.x_f and p is not None:
                todo.append(p)
    keep.append(index.producer[u.y_q])
    # ORT leaves a QuantizeLinear whose output is a graph output unfused: read it back through a
    # DequantizeLinear (exact: (y_q - y_zero) * y_scale, small integers) as the file's next unit does
    back = onnx.helper.make_node("DequantizeLinear", [u.y_q, u.y_scale, u.y_zero], [UNIT_OUT], name="drifttui_unit_out")
    nodes = [index.nodes[k].proto for k in sorted(keep)] + [back]
    names = {i for n in nodes for i in n.input}
    graph = onnx.helper.make_graph(nodes, "unit", [onnx.helper.make_tensor_value_info(u.x_f, 1, shape)],
                                   [onnx.helper.make_tensor_value_info(UNIT_OUT, 1, None)],
                                   [with_data(index, t) for name, t in index.initializers.items() if name in names])
    return onnx.helper.make_model(graph, opset_imports=list(index.model.opset_import),
                                  ir_version=index.model.ir_version)


def recompute(index: Any, units: list[QdqProduct], runs: list[dict[str, np.ndarray]],
              run_unit: Any) -> list[NodeProduct]:
    """Per unit: ORT's fused output (``run_unit(u, x_q) -> y_q``) vs the exact one, on each run's x_q."""
    out = []
    for u in units:
        n = index.nodes[u.node]
        elements = wrong = max_diff = max_exact = 0
        for vals in runs:
            if u.x_q not in vals or u.x_f not in vals:
                continue
            back = run_unit(u, vals[u.x_f])          # (y_q - y_zero) * y_scale
            y_q = np.rint(back.astype(np.float64) / float(_init(index, u.y_scale).reshape(-1)[0]))
            vals = {**vals, u.y_q: y_q + int(_init(index, u.y_zero).reshape(-1)[0])}
            exact = _exact(index, n, u, vals)
            y = vals[u.y_q].astype(np.int64)
            if exact is None or exact.shape != y.shape:
                continue
            d = np.abs(y - exact)
            elements += y.size
            wrong += int(np.count_nonzero(d > TOLERATED))
            max_diff = max(max_diff, int(d.max()) if d.size else 0)
            zy = int(np.asarray(_init(index, u.y_zero)).reshape(-1)[0])
            max_exact = max(max_exact, int(np.abs(exact - zy).max()) if exact.size else 0)
        if elements:
            out.append(NodeProduct(u.node, n.name, f"QDQ {n.op_type}", elements, wrong,
                                   max_diff if wrong else 0, max_exact, None, unit="requantized"))
    return out


def _init(index: Any, name: str) -> np.ndarray:
    return tensor_array(index, name)


def _exact(index: Any, n: Any, u: QdqProduct, vals: dict[str, np.ndarray]) -> Optional[np.ndarray]:
    """The exactly computed, requantized output of the unit on these values."""
    from onnx import helper

    x = vals[u.x_q].astype(np.int64) - _init(index, u.x_zero).astype(np.int64)
    wq = _init(index, u.w_q).astype(np.int64)
    ws = _init(index, u.w_scale).astype(np.float64)
    wz = _init(index, u.w_zero).astype(np.int64)
    xs = float(_init(index, u.x_scale).reshape(-1)[0])
    attrs = {a.name: helper.get_attribute_value(a) for a in n.proto.attribute}
    if n.op_type == "Conv":
        axis_shape = [-1] + [1] * (wq.ndim - 1)
        w = wq - (wz.reshape(axis_shape) if wz.size > 1 else wz)
        cols = im2col(n, x, np.int64(0), w.shape)
        if cols is None:
            return None
        a, spatial = cols
        m, g = w.shape[0], a.shape[1]
        acc = np.einsum("ngpk,gmk->ngmp", a, w.reshape(g, m // g, -1)).reshape(a.shape[0], m, *spatial)
        scale = (xs * ws).reshape([1, -1] + [1] * len(spatial)) if ws.size > 1 else xs * ws
    else:
        w = wq - wz
        if n.op_type == "Gemm":
            x = x.T if attrs.get("transA", 0) else x
            w = w.T if attrs.get("transB", 0) else w
        if x.shape[-1] != w.shape[0] or x.size * w.shape[-1] > MAX_ELEMENTS:
            return None
        acc = np.matmul(x, w)
        scale = xs * ws if ws.size == 1 else (xs * ws).reshape(1, -1)
    y = acc.astype(np.float64) * scale
    if u.bias:
        b = _bias(index, u.bias)
        if b is None:
            return None
        y = y + (b.astype(np.float64).reshape([1, -1] + [1] * (y.ndim - 2)) if n.op_type == "Conv" else b)
    ys = float(_init(index, u.y_scale).reshape(-1)[0])
    zy = _init(index, u.y_zero)
    info = np.iinfo(zy.dtype)
    return np.clip(np.rint(y / ys) + int(zy.reshape(-1)[0]), info.min, info.max).astype(np.int64)


def _bias(index: Any, name: str) -> Optional[np.ndarray]:
    """The float bias: an initializer, or a DequantizeLinear of initializers."""
    if name in index.initializers:
        return _init(index, name).astype(np.float64)
    dq = _dq(index, name)
    if dq is None or any(i not in index.initializers for i in dq.inputs[:3] if i):
        return None
    q = _init(index, dq.inputs[0]).astype(np.float64)
    zero = _init(index, dq.inputs[2]).astype(np.float64) if len(dq.inputs) > 2 and dq.inputs[2] else 0.0
    return (q - zero) * _init(index, dq.inputs[1]).astype(np.float64)
