"""torch's quantisation (issue 30 point 2): a ``QuantizeLinear`` that rounds ``x / scale`` where torch rounds
``x * (1 / scale)``.

torch's quantising kernels (``fake_quantize_per_tensor_affine`` / ``per_channel``, the ``FakeQuantize`` modules of
QAT, ``quantize_per_tensor``) multiply by the float32 reciprocal of the scale and round half to even; ONNX's
``QuantizeLinear``, which both exporters lower them to, divides.  The two quotients differ in the last bit for
some ``x``, and where that is a tie (the mean of two quantised values, a value on a half-step grid) they round
apart: one quantisation step.  No exporter or opset writes another ``QuantizeLinear``; the graph counterfactual
computes it as torch does (``onnx/edit/lowerings/quantize_torch.py``).  Proposed, as one patch for the origin's
QuantizeLinear nodes, only where the case shows it: a node whose value on the case differs from torch's
reciprocal quantisation of its own inputs.  Class ``lowering``: the lowering computes the call otherwise.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.lowerings.quantize_torch import RANGES
from drifttui.core.onnx.edit.rewriting import static_value


def _layout(node: Any, x: np.ndarray, scale: np.ndarray) -> list[int]:
    axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
    return [int(x.ndim), int(axis % x.ndim) if scale.size > 1 and x.ndim else -1]


def torch_quantised(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, layout: list[int], dtype: Any) -> np.ndarray:
    """torch's quantisation of ``x``: ``nearbyint(x * float32(1 / scale)) + zero``, clamped to the type."""
    rank, axis = layout
    shape = [-1] + [1] * (rank - axis - 1) if axis >= 0 else [1] * rank
    inv = (np.float32(1.0) / scale.astype(np.float32)).reshape(shape if axis >= 0 else scale.shape or ())
    z = zero.astype(np.float32).reshape(inv.shape) if zero.size > 1 else zero.astype(np.float32)
    lo, hi, _ = RANGES[3 if np.dtype(dtype) == np.dtype(np.int8) else 2]
    return np.clip(np.rint(x.astype(np.float32) * inv) + z, lo, hi).astype(dtype)


def _differs(node: Any, known: dict[str, np.ndarray], model: Any) -> Optional[list[int]]:
    x, y = known.get(node.input[0]), known.get(node.output[0])
    scale = known.get(node.input[1], static_value(model, node.input[1]))
    zero = known.get(node.input[2], static_value(model, node.input[2])) if len(node.input) > 2 and node.input[2] \
        else np.zeros((), np.uint8)
    if x is None or y is None or scale is None or zero is None or x.dtype != np.float32 \
            or np.dtype(y.dtype) not in (np.dtype(np.int8), np.dtype(np.uint8)):
        return None
    layout = _layout(node, x, np.asarray(scale))
    want = torch_quantised(x, np.asarray(scale), np.asarray(zero), layout, y.dtype)
    return layout if not np.array_equal(want, y) else None


def quantize_patches(case: Case) -> list[Patch]:
    """One patch for the origin's QuantizeLinear nodes whose value differs from torch's quantisation; none
    otherwise."""
    qs, known = picked_values(case, lambda n: n.op_type == "QuantizeLinear" and n.name in set(case.nodes))
    layout = {n.name: lay for n in qs if (lay := _differs(n, known, case.model)) is not None}
    if not layout:
        return []
    names = sorted(layout)
    spec = {"op": "rewrite", "rewrite": "quantize_reciprocal", "node": names[0], "nodes": names, "layout": layout}
    which = ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")
    return [Patch(spec, "lowering",
                  f"QuantizeLinear {which} rounds x / scale; torch's quantising kernel rounds x * (1 / scale), the "
                  "float32 reciprocal, and the two quotients differ in the last bit: where that is a tie (a value "
                  "half-way between two levels) they round apart, one quantisation step; with the QuantizeLinear "
                  "computed as Round(x * Reciprocal(scale)) the file computes what torch computes",
                  "use scales whose reciprocal is exact (a power of two: x / s and x * (1 / s) are then the same "
                  "number), or let `drifttui repair` write each QuantizeLinear as torch quantises; report it with "
                  "`drifttui repro`", "export", module=case.module, nodes=names)]
