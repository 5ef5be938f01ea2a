"""Which of a QDQ file's quantizers are PyTorch's own (quantisation-aware training).

A precision budget is an allowance for what the file loses and PyTorch does not.  Where the model fake-quantises
(``core/runtime/fake_quant.py`` records its calls on the trace forward), PyTorch computes on the same int8 codes as
the file: nothing is lost relative to it, so those quantizers (and the float ops that read only their values) get no
budget and are held to the float32 tolerance.  A QuantizeLinear / DequantizeLinear is the model's own when its scale
(float32, equal) and zero point are those of one of the recorded calls, per tensor or per channel (the same vector
of scales along its axis).  A float model records no call, so a file a deploy tool quantised keeps every budget.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from drifttui.core.runtime.fake_quant import FakeQuant
from drifttui.core.onnx.graph import tensor_array

QUANTIZERS = ("QuantizeLinear", "DequantizeLinear")


def torch_quantizers(index: Any, found: Iterable[FakeQuant]) -> frozenset[int]:
    """Indices of the file's QuantizeLinear / DequantizeLinear nodes whose scale and zero point are one of the
    model's own fake-quantise calls (``found``)."""
    keys = {_key(np.asarray(f.scale, np.float32), np.asarray(f.zero, np.int64)) for f in found}
    if not keys:
        return frozenset()
    out = set()
    for n in index.nodes:
        if n.op_type not in QUANTIZERS or len(n.inputs) < 2:
            continue
        scale = _array(index, n.inputs[1])
        zero = _array(index, n.inputs[2]) if len(n.inputs) > 2 and n.inputs[2] else np.zeros(1)
        if scale is None or zero is None:
            continue
        if _key(scale.astype(np.float32), zero.astype(np.int64)) in keys:
            out.add(n.index)
    return frozenset(out)


def _key(scale: np.ndarray, zero: np.ndarray) -> tuple:
    """Scales and zero points as one comparable key (a per-tensor zero point broadcast to the scales)."""
    s = scale.reshape(-1)
    z = np.broadcast_to(zero.reshape(-1), s.shape) if zero.size in (1, s.size) else zero.reshape(-1)
    return tuple(s.tolist()), tuple(int(v) for v in z)


def _array(index: Any, name: str) -> Any:
    """A constant's values, through the Identity nodes TorchScript puts before a shared constant (a zero point)."""
    while index.constant_tensor(name) is None and name in index.producer and \
            index.nodes[index.producer[name]].op_type == "Identity":
        name = index.nodes[index.producer[name]].inputs[0]
    return tensor_array(index, name)
