"""Initializers of the origin's nodes against the torch tensors they come from.

The torch side: the origin module's parameters, buffers and plain tensor attributes (not in
``state_dict``), and, for a BatchNorm folded into the preceding Conv, the Conv weight and
bias computed *through the fold* (``w * gamma / sqrt(var + eps)``), so a folded weight is
compared rather than skipped.  An initializer that differs yields a ``replace_initializer``
patch whose class says what kind of difference it is: ``dtype`` when the ONNX values are the
torch values rounded to bfloat16/float16, ``custom-module`` for a plain tensor attribute,
``weights`` otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np

from drifttui.core.base.dtypes import SCALAR_FLOAT_ELEMS, rounding_of
from drifttui.core.base.metrics import elementwise_gap
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.prepare.plan.folding import fold_conv_bn
from drifttui.core.onnx.weights import read_tensor


@dataclass
class TorchTensor:
    label: str                 # "parameter layer.weight", "tensor attribute ls.gamma", "folded ..."
    array: np.ndarray
    plain: bool = False        # a plain tensor attribute (not a parameter or buffer)
    fold: tuple[str, str] = ("", "")   # a folded Conv weight: (the Conv module, the BatchNorm module)


def _np(t: Any) -> np.ndarray:
    return t.detach().float().cpu().numpy()


def torch_tensors(module: Any, prefix: str, folds: list[tuple[str, Any, str, Any]]) -> list[TorchTensor]:
    """Tensors of ``module`` (qualified names under ``prefix``) plus folded Conv+BN weights."""
    import torch

    out: list[TorchTensor] = []
    if module is None:
        return out
    q = f"{prefix}." if prefix else ""
    for n, p in module.named_parameters():
        out.append(TorchTensor(f"parameter {q}{n}", _np(p)))
    for n, b in module.named_buffers():
        if b.is_floating_point():
            out.append(TorchTensor(f"buffer {q}{n}", _np(b)))
    for mn, m in module.named_modules():
        for an, v in vars(m).items():
            if isinstance(v, torch.Tensor) and v.is_floating_point() and not an.startswith("_"):
                out.append(TorchTensor(f"tensor attribute {q}{mn + '.' if mn else ''}{an}", _np(v), plain=True))
    for cname, conv, bname, bn in folds:
        w, b = fold_conv_bn(conv, bn)
        out.append(TorchTensor(f"folded {cname}.weight * {bname} (through the BatchNorm fold)", w,
                               fold=(cname, bname)))
        out.append(TorchTensor(f"folded {cname}.bias with {bname} (through the BatchNorm fold)", b))
    return out


def _layouts(t: np.ndarray, shape: tuple[int, ...]) -> Iterator[np.ndarray]:
    if t.shape == shape:
        yield t
    if t.ndim == 2 and t.T.shape == shape:
        yield t.T                       # Linear weights stored transposed for MatMul
    if t.size == int(np.prod(shape)) and t.shape != shape:
        yield t.reshape(shape)


def _differs(a: np.ndarray, b: np.ndarray) -> float:
    d = elementwise_gap(a, b)
    finite = np.abs(b[np.isfinite(b)]) if b.size else b
    # same values up to float32 rounding of the fold (1e-5 of the tensor's scale)
    return d if d > 1e-8 + 1e-5 * float(np.max(finite, initial=0.0)) else 0.0


def weight_candidates(case: Case, tensors: list[TorchTensor]) -> list[Patch]:
    used = {v for n in case.model.graph.node for v in n.input}
    statics = list(case.model.graph.initializer)
    for n in case.model.graph.node:        # TorchScript keeps tensor attributes as Constant nodes
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    t = type(a.t)()
                    t.CopyFrom(a.t)
                    t.name = n.output[0]
                    statics.append(t)
    out: list[Patch] = []
    for init in statics:
        if init.name not in used or init.data_type not in SCALAR_FLOAT_ELEMS:
            continue
        arr = read_tensor(init).astype(np.float32)
        if arr.size < 2:
            continue
        best: Optional[tuple[float, TorchTensor, np.ndarray]] = None
        exact = False
        # a tensor with the initializer's own name (dynamo keeps qualified names) first
        named = [tt for tt in tensors if tt.label.split(" ")[-1] == init.name]
        named_ids = {id(tt) for tt in named}
        for tt in named + [tt for tt in tensors if id(tt) not in named_ids]:
            for lay in _layouts(tt.array, arr.shape):
                d = _differs(arr, lay)
                if d == 0.0:
                    exact = True
                    break
                rel = d / max(float(np.max(np.abs(lay))), 1e-12)
                if (rel < 2.0 or id(tt) in named_ids) and (best is None or d < best[0]):
                    best = (d, tt, lay)
            if exact:
                break
        if exact or best is None:
            continue
        d, tt, lay = best
        out.append(_patch(case, init.name, arr, tt, lay, d))
    return out


def _patch(case: Case, name: str, arr: np.ndarray, tt: TorchTensor, lay: np.ndarray, d: float) -> Patch:
    spec = {"op": "replace_initializer", "name": name, "source": tt.label, "max_abs_diff": float(f"{d:.4g}")}
    kind = rounding_of(arr, lay)
    if kind is not None:
        return Patch(spec, "dtype", f"initializer {name} holds the {tt.label} values rounded to {kind}",
                         f"store {name} at float32 (export without casting the weights to {kind}, and do not fold "
                         "constants at lower precision)", "export", lay.copy(), case.module)
    if tt.plain:
        return Patch(spec, "custom-module",
                     f"initializer {name} differs from the {tt.label} (max diff {d:.3g}): the plain tensor "
                     "attribute is not saved with the weights", "register it as a buffer (register_buffer) so "
                     "state_dict carries it, then reload the trained weights and re-export", "model", lay.copy(),
                     case.module)
    member = fold_member(arr, lay, *tt.fold) if tt.fold[0] else ""
    return Patch(spec, "weights", f"initializer {name} differs from the {tt.label} (max diff {d:.3g}){member}",
                 "re-export from the weights you compare with (the ONNX file holds other values)", "model",
                 lay.copy(), case.module)


def fold_member(arr: np.ndarray, folded: np.ndarray, conv: str, bn: str) -> str:
    """Which member of a Conv+BatchNorm unit a folded weight's difference sits in (issue 30 point 6): the
    BatchNorm's contribution to the folded weight is one factor per output channel (gamma / sqrt(var + eps)),
    so a difference that is such a factor on each channel it touches is the BatchNorm's scale; any other (an
    element, a row of a channel) is the Conv's own weight."""
    a = arr.reshape(arr.shape[0], -1).astype(np.float64)
    f = folded.reshape(folded.shape[0], -1).astype(np.float64)
    tol = 1e-5 * max(float(np.max(np.abs(f), initial=0.0)), 1e-12)
    bad = np.abs(a - f) > tol
    channels = [int(c) for c in np.flatnonzero(bad.any(axis=1))]
    if not channels:
        return ""
    for c in channels:
        k = float(a[c] @ f[c]) / max(float(f[c] @ f[c]), 1e-30)
        if not np.all(np.abs(a[c] - k * f[c]) <= tol):
            at = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(np.abs(arr - folded).ravel() > tol)[0]),
                                                        arr.shape))
            return (f"; unfolded, the difference is not one factor per output channel: {conv}'s own weight "
                    f"differs (first at {list(at)}), not {bn}'s scale")
    said = ", ".join(str(c) for c in channels[:6]) + (", ..." if len(channels) > 6 else "")
    return (f"; unfolded, the difference is one factor per output channel (channel {said}): {bn}'s scale "
            f"(its weight or running_var) differs, not {conv}'s weight")
