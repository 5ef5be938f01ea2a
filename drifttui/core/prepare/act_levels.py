"""How many integer levels each int8 activation of a quantized file uses, on sample 0.

The rounding of a quantized activation is +-scale/2 per element: relative to the value it stands
for, scale / max|dequantized value| = 1 / max|q - zero point|, the largest level it reaches.  A
static quantizer (QuantizeLinear, a QLinear* op's output) has the file's calibrated scale: a value
calibrated on a wider range than the data uses few levels (a coarse step, and so a wider budget);
DynamicQuantizeLinear computes its scale from the tensor's own min / max (255 levels over a range
that holds 0: 255 for a one-signed tensor, about 128 for a symmetric one).  Measured on sample 0
of the deployed file (optimisations off), the one run prepare makes for it; the budget is static
(precision.scan), so the other samples are held to sample 0's step.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.onnx.qviews import QOPERATOR, quantized_values
from drifttui.core.onnx.graph import tensor_array


def quantized_outputs(index: Any, reduced: dict[int, Any]) -> dict[str, str]:
    """Quantizer outputs of the reduced nodes -> the value (initializer or not) of their zero point."""
    out: dict[str, str] = {}
    q_views = quantized_values(index)
    for k in reduced:
        n = index.nodes[k]
        if n.op_type == "DynamicQuantizeLinear" and len(n.outputs) > 2:
            out[n.outputs[0]] = n.outputs[2]
        elif n.op_type == "QuantizeLinear" and n.outputs and len(n.inputs) > 2:
            out[n.outputs[0]] = n.inputs[2]
        for o in n.outputs:
            if o in q_views:
                out[o] = q_views[o][1]
            elif n.op_type.startswith(QOPERATOR):
                zero = _dequantized_zero(index, o)   # read by the file's own DequantizeLinear (a float reader)
                if zero is not None:
                    out[o] = zero
    return out


def _dequantized_zero(index: Any, value: str) -> Optional[str]:
    """The zero point a DequantizeLinear reads ``value`` with (a QOperator output a float layer
    reads: a node the user kept in float32, or the graph output), or None."""
    for c in index.consumers.get(value, []):
        n = index.nodes[c]
        if n.op_type == "DequantizeLinear" and n.inputs and n.inputs[0] == value and len(n.inputs) > 2:
            return n.inputs[2]
    return None


def measure(index: Any, reduced: dict[int, Any], run: Callable[[list[str]], dict[str, np.ndarray]]) -> dict[str, int]:
    """Quantizer output -> max |q - zero point| on sample 0 (``run(values)`` runs the file on it)."""
    wanted = quantized_outputs(index, reduced)
    if not wanted:
        return {}
    names = sorted({*wanted, *(z for z in wanted.values() if z not in index.initializers)})
    vals = run(names)
    out: dict[str, int] = {}
    for v, z in wanted.items():
        q = vals.get(v)
        zp = tensor_array(index, z) if z in index.initializers else vals.get(z)
        if q is None or zp is None or q.size == 0 or np.size(zp) != 1:
            continue
        level = int(np.max(np.abs(q.astype(np.int64) - int(np.asarray(zp).reshape(-1)[0]))))
        if level > 0:
            out[v] = level
    return out
