"""Which activation QuantizeLinear -> DequantizeLinear pairs of a QDQ file a keep-list removes.

onnxruntime.quantization's QDQ format rounds an activation with one pair shared by the op that
makes it and the ops that read it: measured with ``quantize_static(nodes_to_exclude=...)``, the
pair stays while its producer (a quantized op, through a Relu / Clip the quantizer folds into it)
or any of its readers is quantized, and goes only when all of them are excluded.  So a reader kept
in float32 alone still reads the rounded value (heavy_cnn's b1 with stem quantized): the patch on a
copy (keep_float32.py) and the layers kept together (keep_qoperator.unit) follow the same rule.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.onnx.qviews import QOPERATOR

_FOLDED = ("Relu", "Clip")       # activations the QDQ quantizer folds into the op before them


def activation_pair(index: Any, dq: int) -> Optional[int]:
    """The QuantizeLinear of DequantizeLinear node ``dq`` when the pair rounds an activation."""
    n = index.nodes[dq]
    if n.op_type != "DequantizeLinear" or not n.inputs:
        return None
    q = index.producer.get(n.inputs[0])
    return q if q is not None and index.nodes[q].op_type == "QuantizeLinear" else None


def quantized_op(index: Any, k: int) -> bool:
    """A float op of the QDQ format: it reads a dequantized value (not a quantizer itself)."""
    n = index.nodes[k]
    if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
        return False
    return any((p := index.producer.get(i)) is not None and index.nodes[p].op_type == "DequantizeLinear"
               for i in n.inputs)


def producer_op(index: Any, q: int) -> Optional[int]:
    """The op whose output QuantizeLinear ``q`` rounds, through the activations folded into it."""
    p = index.producer.get(index.nodes[q].inputs[0]) if index.nodes[q].inputs else None
    while p is not None and index.nodes[p].op_type in _FOLDED and index.nodes[p].inputs:
        up = index.producer.get(index.nodes[p].inputs[0])
        if up is None or not quantized_op(index, up):
            break
        p = up
    return p


def pair_removed(index: Any, dq: int, keep: set[int]) -> bool:
    """Whether the user's quantizer, with ``keep`` excluded, leaves no rounding at ``dq``'s pair."""
    q = activation_pair(index, dq)
    if q is None:
        return False
    p = producer_op(index, q)
    if p is not None and quantized_op(index, p) and p not in keep:
        return False
    return all(c in keep for o in index.nodes[dq].outputs for c in index.consumers.get(o, []))


def rounding_producers(index: Any, node_ids: tuple[int, ...]) -> list[int]:
    """The quantized ops whose rounded outputs the nodes ``node_ids`` read through a DequantizeLinear
    (a QDQ pair's producer, or a QOperator op whose output a float layer dequantizes): to keep with
    them for that rounding to go."""
    out: list[int] = []
    for k in node_ids:
        for i in index.nodes[k].inputs:
            dq = index.producer.get(i)
            if dq is None or index.nodes[dq].op_type != "DequantizeLinear" or not index.nodes[dq].inputs:
                continue
            src = index.producer.get(index.nodes[dq].inputs[0])
            if src is not None and index.nodes[src].op_type.startswith(QOPERATOR):
                p: Optional[int] = src
            else:
                q = activation_pair(index, dq)
                p = producer_op(index, q) if q is not None else None
                p = p if p is not None and quantized_op(index, p) else None
            if p is not None and p not in out:
                out.append(p)
    return out
