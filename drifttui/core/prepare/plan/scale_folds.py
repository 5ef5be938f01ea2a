"""A constant factor a tool moved out of a value into the weight of the node that reads it.

onnxsim folds a ``Mul`` by a constant that sits before a Conv / MatMul / Gemm into that node's
weight: timm's GELU ends in ``* 0.5``, and its ConvNeXt multiplies fc2's output by the layer scale
``gamma``; both go into fc2's weight.  The activation's value is then no longer in the file, only
``s`` times it (``s`` a constant per input channel of the reader), and the reader computes the
unit's output exactly again.  Such a value is never the module's own: the module is fused into
the unit (compared as part of the call whose value the reader outputs), as a BatchNorm folded
into its Conv is, and never compared raw (that was a false DRIFT of exactly the moved factor).

Told apart from a drift by structure: the factor the value gained is the one its reader's weight
lost.  The deployed weight, times ``s`` along its input axis, is the reference's weight up to a
factor per output channel of either sign (what the tool may have folded from after the node), and
it is not the reference's weight (the tool changed it).  A drift planted after the pipeline in the producer
scales the value but leaves the reader's weight the reference's; one planted in the reader's
weight changes the reader's output, which is then compared and fails.

The other way (a constant ``Mul`` / ``Add`` after a Conv folded into that Conv's weight and bias: ORT's
ConvMulFusion and ConvAddFusion at ENABLE_BASIC) the Conv outputs the value one node after its
module's: reference.py sees the file as processed (the exporter's Conv outputs a value named after a
node the file no longer has) and maps it through a reference export, where the Conv's value equals
the reference's next value (activations.carried_downstream): the module is fused into the unit.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.graph import tensor_array

FOLD_RTOL = 2e-3           # the value equals s * reference within this (a float16 file's rounding included)
SAME_VALUE = 10 * FOLD_RTOL  # factors all this close to 1: the value itself, or a small drift of it (a GELU in
#                              the other form: its ratio per channel strays ~0.2% from 1), never a moved factor
SCALE_HOW = "values whose constant factor went into the next node's weight"     # counted in the mapping note


def _reader_weight(dep: Any, node: Any) -> Optional[tuple[str, int, int]]:
    """(weight name, the value's axis the weight's input axis reads, the weight's input axis) of a
    Conv / MatMul / Gemm reading the value as its data input, with a constant weight."""
    if len(node.inputs) < 2 or not dep.is_static(node.inputs[1]) or dep.is_static(node.inputs[0]):
        return None
    if node.op_type == "Conv":
        return node.inputs[1], 1, 1
    if node.op_type == "MatMul":
        return node.inputs[1], -1, 0
    if node.op_type == "Gemm":
        trans_b = any(a.name == "transB" and a.i for a in node.proto.attribute)
        trans_a = any(a.name == "transA" and a.i for a in node.proto.attribute)
        return (None if trans_a else (node.inputs[1], -1, 1 if trans_b else 0))
    return None


def _channel_scale(a: np.ndarray, b: np.ndarray, axis: int) -> Optional[np.ndarray]:
    """``s`` (one factor per index of ``axis``) with ``b == s * a`` within FOLD_RTOL, or None."""
    if a.shape != b.shape or not a.size or a.ndim == 0:
        return None
    x, y = np.moveaxis(a.astype(np.float64), axis, 0), np.moveaxis(b.astype(np.float64), axis, 0)
    x2, y2 = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    if x2.shape[1] < 2:
        # one element per channel (a 1x1 map): any value is some factor per channel times the reference,
        # so only one factor for all (a GELU's 0.5) is evidence; a drift's ratios stray around 1
        s = one_factor(x2.reshape(1, -1), y2.reshape(1, -1))
        return None if s is None else np.full(x2.shape[0], s[0])
    return one_factor(x2, y2)


def one_factor(x2: np.ndarray, y2: np.ndarray) -> Optional[np.ndarray]:
    """One factor per row of ``x2`` with ``y2 == s * x2`` within FOLD_RTOL (not all 1), or None."""
    den = np.einsum("ij,ij->i", x2, x2)
    if not np.all(den > 0):
        return None
    s = np.einsum("ij,ij->i", x2, y2) / den
    scale = float(np.max(np.abs(y2)))
    if not scale or float(np.max(np.abs(y2 - s[:, None] * x2))) > FOLD_RTOL * scale:
        return None
    if float(np.max(np.abs(s - 1.0))) <= SAME_VALUE:
        return None          # the value itself (or a drift of it), not a scaled copy
    return s


def _rows(w: np.ndarray, in_axis: int) -> np.ndarray:
    """The weight as [output channel, everything else], the input axis second."""
    out_axis = 0 if in_axis != 0 else 1
    w = np.moveaxis(w, (out_axis, in_axis), (0, 1))
    return w.reshape(w.shape[0], w.shape[1], -1)


def _compensates(w_dep: np.ndarray, w_ref: np.ndarray, in_axis: int, s: np.ndarray) -> bool:
    """``w_dep * s`` (along the input axis) is ``w_ref`` up to a factor per output row (of either sign),
    element by element within FOLD_RTOL, and ``w_dep`` is not ``w_ref``: the reader's weight took exactly
    what the value gained."""
    if w_ref.shape != w_dep.shape:
        if w_ref.ndim == 2 and w_ref.T.shape == w_dep.shape:
            w_ref = w_ref.T
        else:
            return False
    d, r = _rows(w_dep.astype(np.float64), in_axis), _rows(w_ref.astype(np.float64), in_axis)
    if d.shape[1] == s.size:
        d = d * s[None, :, None]
    elif not np.allclose(s, s[0], rtol=FOLD_RTOL):      # a grouped Conv reads one channel per group
        return False
    else:
        d = d * s[0]
    if float(np.max(np.abs(w_dep - w_ref))) <= FOLD_RTOL * float(np.max(np.abs(w_ref))):
        return False
    d2, r2 = d.reshape(d.shape[0], -1), r.reshape(r.shape[0], -1)
    den = np.einsum("ij,ij->i", r2, r2)
    live = den > 0
    if not live.any():
        return False
    c = np.einsum("ij,ij->i", d2[live], r2[live]) / den[live]      # the row's factor: of either sign
    scale = float(np.max(np.abs(d2)))
    # element by element, not by direction: a value that is the reference's times ~1 (a drift whose
    # ratio per channel strays a little from 1) leaves rows that point the same way whatever ``s`` is
    return bool(scale) and float(np.max(np.abs(d2[live] - c[:, None] * r2[live]))) <= FOLD_RTOL * scale


def scale_folded(ref: Any, dep: Any, a: np.ndarray, mask: int, cands: list[str], dep_vals: dict,
                 d_mask: dict, anchors: dict[str, str]) -> Optional[str]:
    """The candidate that holds the reference value ``a`` times a constant factor its reader's
    weight lost (module docstring), or None."""
    for d in cands:
        if d_mask.get(d, 0) != mask:
            continue
        b = dep_vals[d]
        for c in dep.consumers.get(d, []):
            found = _reader_weight(dep, dep.nodes[c])
            if found is None or dep.nodes[c].inputs[0] != d:
                continue
            w_name, axis, in_axis = found
            r_name = anchors.get(w_name)
            w_dep = tensor_array(dep, w_name)
            w_ref = tensor_array(ref, r_name) if r_name else None
            if w_dep is None or w_ref is None or b.shape != a.shape:
                continue
            s = _channel_scale(a, b, axis % a.ndim)
            if s is not None and _compensates(w_dep, w_ref, in_axis, s):
                return d
    return None
