"""Activations that the deployed file computes inside another node, so the value before them is gone:

- a ReLU a quantizer folded into its output (QOperator's QLinearConv with a zero point at the
  type's lowest level): only max(reference, 0) is in the file;
- an activation an optimiser fused into the node before it (ORT's FusedConv / FusedGemm with
  ``activation=Relu`` after a functional ``torch.relu``): the node outputs the value one node after
  the module's, which is the root's own op.

matching.py asks these before it pairs a reference value with a deployed one that merely comes close.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.base.dtypes import INT8_ELEMS
from drifttui.core.prepare.plan.closeness import EQUAL_RTOL, Match, err as _err
from drifttui.core.onnx.graph import tensor_array

FOLDED_RTOL = 0.1          # a quantized value equals max(reference, 0) this closely: a ReLU folded into it
FOLDED_HOW = "outputs behind a ReLU folded into a quantizer"     # counted in the mapping note


def relu_folded(index: Any, value: str) -> bool:
    """``value`` is dequantized with its zero point at the type's lowest level (0 for uint8): it
    cannot be negative, the quantizer folded a ReLU into it (QOperator's QLinearConv/QLinearAdd
    with the ReLU after them removed)."""
    p = index.producer.get(value)
    if p is None or index.nodes[p].op_type != "DequantizeLinear" or len(index.nodes[p].inputs) < 3:
        return False
    z = index.constant_tensor(index.nodes[p].inputs[2])
    if z is None or z.data_type not in INT8_ELEMS:
        return False
    zp = tensor_array(index, index.nodes[p].inputs[2])
    return zp.size == 1 and int(zp.reshape(-1)[0]) == (0 if z.data_type == 2 else -128)


def behind_folded_relu(a: np.ndarray, mask: int, cands: list[str], clipped: set[str], dep_vals: dict,
                        d_mask: dict) -> bool:
    """The reference value ``a`` (with negatives) is carried only through a ReLU the quantizer folded
    into a deployed value: that value equals max(a, 0) within FOLDED_RTOL, with the same anchors."""
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    if not scale or float(a.min()) > -0.05 * scale:
        return False
    relu = np.maximum(a, 0)
    return any(d in clipped and d_mask.get(d, 0) == mask and dep_vals[d].size == a.size
               and _err(relu, dep_vals[d], scale) <= FOLDED_RTOL for d in cands)


def one_hop(ref: Any, wanted: list[str]) -> list[str]:
    """The values one node after the wanted ones that are not wanted themselves (a functional
    ``torch.relu`` after a module: the root's own op), in graph order."""
    want = set(wanted)
    out: list[str] = []
    for v in wanted:
        for c in ref.consumers.get(v, []):
            out.extend(o for o in ref.nodes[c].outputs if o and o not in want and o not in out)
    return out


DOWNSTREAM_RATIO = 4.0     # a deployed value this much closer to a value after the wanted one carries that one


def carried_downstream(ref: Any, want: set[str], ref_vals: dict, dep_vals: dict, choice: dict[str, Match],
                        downstream: dict[str, Match]) -> None:
    """A wanted reference value whose only close deployed value is not equal to it, but equal (or
    far closer) to the value one node after it, has no value of its own in the file: an optimiser
    fused that node into the one computing it (ORT's FusedConv with ``activation=Relu`` after a
    functional ``torch.relu``).  Its match is dropped (the call is then fused, compared as part of
    the call that owns the fused node) and the downstream value's match kept for the plan's note;
    comparing it raw was a false drift of exactly the activation's effect."""
    for r, m in list(choice.items()):
        if m.exact or m.perm is not None:
            continue
        b = dep_vals[m.value]
        for c in ref.consumers.get(r, []):
            for v in ref.nodes[c].outputs:
                a = ref_vals.get(v)
                if v in want or a is None or a.size != b.size or a.dtype.kind != b.dtype.kind:
                    continue
                err = _err(a, b, float(np.max(np.abs(a))) if a.size else 0.0)
                if err <= EQUAL_RTOL or err * DOWNSTREAM_RATIO < m.err:
                    del choice[r]
                    downstream[v] = Match(m.value, err, err <= EQUAL_RTOL)
                    break
            if r not in choice:
                break
