"""A reduced-precision file's weights against the model's: is each int8 / float16 weight a rounding of a
torch tensor?

A quantizer rounds a float weight to its integer grid: dequantized with its reader's own scale and zero
point, every element is within half a step of the weight it came from (``quantize_dynamic``,
``quantize_static`` QDQ and QOperator, per tensor or per channel, ``reduce_range`` or not).  An int8
weight further than one step from the tensor it points to (closest by direction among the tensors of
the module that owns its reader, a BatchNorm folded into its Conv included) is not the model's: a wrong
weight or a wrong weight scale in the file.  That is evidence no precision budget can explain, and it
does not depend on the activations (a float16 weight likewise: within one unit in the last place of
the model's, where a budget on the layer's values let a weight x1.05 pass): on a CPU whose u8s8 kernels saturate, every quantized layer is
over its budget, and a wrong weight's own error looks like its neighbours' (issue 33, point 7: a
drift planted at ``layers.1.mlp.0`` of an int8 transformer was named at ``layers.0.attn.qkv``, the
first saturating layer).

Each such weight becomes a ``WeightCheck`` of the call that owns its reader (the call the precision
budget counts the reader in): decide fails it at the float32 tolerance with one step of rounding
allowed, so a re-decision at another tolerance re-judges it.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

import numpy as np

from drifttui.core.onnx.qweights import QWeight, int8_weights, low_precision_weights, nbits_weights
from drifttui.core.prepare.plan.folding import conv_bn_folds, fold_conv_bn
from drifttui.core.prepare.plan.plan import WeightCheck

MIN_COS = 0.9           # a drifted weight still points its tensor's way (anchors.MIN_COS)
FOLD_ULPS = 4          # a float16 constant folded in float16 by the exporter: this many roundings from torch's


def _tensors(model: Any, calls: list[Any]) -> dict[str, list[tuple[str, np.ndarray]]]:
    """Module name -> (label, float tensor) of its parameters, and of each Conv the BatchNorm called
    right after it folds into (under both modules' names)."""
    out: dict[str, list[tuple[str, np.ndarray]]] = {}
    for name, p in model.named_parameters():
        mod = name.rsplit(".", 1)[0] if "." in name else ""
        out.setdefault(mod, []).append((name, p.detach().float().cpu().numpy()))
    for prev, c, conv, bn in conv_bn_folds(model, calls):
        w, _ = fold_conv_bn(conv, bn)
        entry = (f"{prev.module}.weight folded with {c.module}", w)
        out.setdefault(prev.module, []).append(entry)
        out.setdefault(c.module, []).append(entry)
    return out


def _layouts(t: np.ndarray, shape: tuple[int, ...]) -> Iterator[np.ndarray]:
    if t.shape == shape:
        yield t
    if t.ndim == 2 and t.T.shape == shape:
        yield t.T                       # a Linear's weight stored transposed for MatMul
    if t.size == int(np.prod(shape)) and t.shape != shape and not (t.ndim == 2 and t.T.shape == shape):
        yield t.reshape(shape)


def _closest(w: QWeight, cands: list[tuple[str, np.ndarray]]) -> Optional[tuple[str, np.ndarray]]:
    best, best_cos = None, MIN_COS
    x = w.values.reshape(-1).astype(np.float64)
    nx = float(np.linalg.norm(x))
    for label, t in cands:
        if t.size != w.values.size or not nx:
            continue
        for v in _layouts(t, w.values.shape):
            y = v.reshape(-1).astype(np.float64)
            cos = float(x @ y) / (nx * float(np.linalg.norm(y)) + 1e-30)
            if cos > best_cos:
                best, best_cos = (label, v), cos
    return best


def _subtree(tensors: dict[str, list[tuple[str, np.ndarray]]], module: str) -> list[tuple[str, np.ndarray]]:
    return [e for m, rows in tensors.items() if not module or m == module or m.startswith(module + ".")
            for e in rows]


def model_weights(index: Any, calls: list[Any], model: Any,
                  budgets: dict[int, Any]) -> Iterator[tuple[int, QWeight, str, np.ndarray]]:
    """(call, the file's reduced weight, the label of the model's tensor it points to, that tensor in
    the weight's layout) for each int8 / float16 weight that points to one of its call's tensors."""
    owner = {k: c for c, b in budgets.items() for k in getattr(b, "node_ids", ())}
    if not owner or model is None:
        return
    tensors = _tensors(model, calls)
    for w in [*int8_weights(index), *low_precision_weights(index), *nbits_weights(index)]:
        c = owner.get(w.reader)
        if c is None:      # a QDQ weight's DequantizeLinear: the call of the op that reads its float value
            c = next((owner[r] for o in index.nodes[w.reader].outputs for r in index.consumers.get(o, [])
                      if r in owner), None)
        if c is None:
            continue
        found = _closest(w, _subtree(tensors, calls[c].module))
        if found is None and calls[c].parent is not None:     # a fold attributed to its neighbour
            found = _closest(w, _subtree(tensors, calls[calls[c].parent].module))
        if found is not None:
            yield c, w, found[0], found[1]


def _a_folded_constant(w: QWeight, folded: list[tuple[str, np.ndarray]]) -> bool:
    """``w`` is a rounding of a constant the model computes from its parameters (folded_constants.py): every
    element within one step of it, in some layout; a float16 / bfloat16 one within FOLD_ULPS steps (the exporter's
    folder computes it in the low type itself, each op rounded: onnxscript folds with ONNX's reference
    implementation, a float16 norm summed in float16, a few units in the last place from torch's)."""
    x = w.values.astype(np.float64)
    k = FOLD_ULPS if not w.scale and w.zero is None and not w.packed else 1
    return any(bool(np.all(np.abs(x - v) <= k * w.step * (1 + 1e-6))) for _, t in folded if t.size == x.size
               for v in _layouts(t, x.shape))


def weight_checks(index: Any, calls: list[Any], model: Any, budgets: dict[int, Any],
                  folded: Optional[Callable[[set[int]], list[tuple[str, np.ndarray]]]] = None
                  ) -> dict[int, list[WeightCheck]]:
    """Call -> its int8 weights compared with the model's tensors (those that point to one).  A weight more than a
    step off its tensor that is a rounding of a constant the model folds (``folded``: those of the given sizes,
    computed once, only when such a weight is found) is the model's: the exporter's folding, not a wrong weight."""
    out: dict[int, list[WeightCheck]] = {}
    found = []
    for c, w, label, t in model_weights(index, calls, model, budgets):
        scale = float(np.max(np.abs(t)))
        if scale:
            found.append((c, w, label, t, scale, np.abs(w.values.astype(np.float64) - t)))
    off = {w.values.size for _, w, _, _, _, d in found if bool(np.any(d > w.step))}
    consts = folded(off) if folded is not None and off else []
    for c, w, label, t, scale, d in found:
        if bool(np.any(d > w.step)) and _a_folded_constant(w, consts):
            continue
        node = index.nodes[w.reader]
        kind = (f"block-quantized initializer {w.name} (block scales {w.scale})" if w.packed
                else f"int8 initializer {w.name} (scale {w.scale})" if w.scale
                else f"reduced-precision initializer {w.name}")
        where = (f"{kind}, read by {node.op_type} node {node.name} "
                 f"({int(np.sum(d > w.step))} of {d.size} elements more than one rounding step off),")
        out.setdefault(c, []).append(WeightCheck(where, label, float(d.max()), scale, w.reader,
                                                 float(np.max(w.step)) / scale, strict=True,
                                                 ref_kind="the model's", init="" if w.packed else w.name))
        # (a packed block weight is not restored: repair would have to repack its blocks)
    return out
