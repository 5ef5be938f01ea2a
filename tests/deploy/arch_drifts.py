"""Drifts injected into a real architecture's file AFTER the deployment pipeline, found by content and
graph position, never by a name the tool may have changed.  The same function on the raw export gives
the origin the processed file must reproduce.

- ``weight``: the initializer carrying a module's weight, times 1.05: equal, transposed, scaled per
  output channel (a folded BatchNorm), ORT's blocked NCHWc copy (the one tensor of its shape), or a
  block of a concatenation (the transformers optimizer's Attention packs Q, K and V in one weight);
- ``epsilon``: the k-th normalisation's epsilon: a (Skip)(Simplified)LayerNormalization attribute, or
  the scalar an RMSNorm adds before its Sqrt in an unfused graph;
- an attribute: a Conv's dilation (2, with pads 2: the shape holds), the k-th Softmax's axis (-2), a
  Gemm's transB flipped on a square weight.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import onnx
from onnx import numpy_helper

NORMS = ("LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
         "SkipSimplifiedLayerNormalization")


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    return abs(float(x @ y) / (np.linalg.norm(x) * np.linalg.norm(y) + 1e-12))


def _whole(a: np.ndarray, t: np.ndarray) -> float:
    """How well initializer ``a`` carries ``t`` whole (equal, transposed, scaled per output channel)."""
    best = 0.0
    for cand in (t, t.T) if t.ndim == 2 else (t,):
        if a.size != cand.size:
            continue
        best = max(best, _cos(a.reshape(-1), cand.reshape(-1)))
        if a.shape == cand.shape and a.ndim >= 2:
            rows = [_cos(p, q) for p, q in zip(a.reshape(a.shape[0], -1), cand.reshape(cand.shape[0], -1))]
            best = max(best, min(rows))
    return best


def _block(a: np.ndarray, t: np.ndarray) -> Optional[tuple]:
    """The index of ``a`` holding ``t`` (or its transpose) as a block of a concatenation, else None."""
    if a.ndim != 2 or t.ndim != 2 or a.size <= t.size:
        return None
    for view, back in ((t, False), (t.T, True)):
        for axis in (0, 1):
            n, other = view.shape[axis], view.shape[1 - axis]
            if a.shape[1 - axis] != other or a.shape[axis] % n:
                continue
            for k in range(a.shape[axis] // n):
                sl = [slice(None), slice(None)]
                sl[axis] = slice(k * n, (k + 1) * n)
                if np.allclose(a[tuple(sl)], view, rtol=1e-5, atol=1e-6):
                    return tuple(sl)
    return None


def weight(path: Path, target: np.ndarray, dst: Path, factor: float = 1.05) -> Path:
    """Every element of the initializer (or block of one) carrying ``target`` times ``factor``."""
    model = onnx.load(str(path))
    scored = []
    for t in model.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(t)
        scored.append((_whole(a, target), t, a))
    cos, t, a = max(scored, key=lambda s: s[0])
    if cos > 0.9:
        a = a * factor
    else:
        found = [(t, a, _block(a, target)) for _, t, a in scored]
        found = [f for f in found if f[2] is not None]
        if found:
            t, a, sl = found[0]
            a = a.copy()
            a[sl] *= factor
        else:       # ORT's NCHWc Conv keeps the weight reordered (and padded) into its blocked layout
            cos, t, a = max(((_reorder_cos(a, target), t, a) for _, t, a in scored), key=lambda s: s[0])
            assert cos > 0.9, "the weight is not in the file"
            a = a * factor
    t.CopyFrom(numpy_helper.from_array(a.astype(np.float32), t.name))
    onnx.save(model, str(dst))
    return dst


def _reorder_cos(a: np.ndarray, t: np.ndarray) -> float:
    """How well ``a``, a Conv weight in ORT's blocked NCHWc layout (OIHW8i8o / OIHW16i16o, or OIHW8o
    for a stem Conv; channels padded), carries ``t`` (OIHW, maybe scaled per output channel by a
    folded BatchNorm): the best unblocked view's worst per-channel cosine."""
    if a.ndim != 4 or a.shape[2:] != t.shape[2:]:
        return 0.0
    o, i, h, w = a.shape
    best = 0.0
    for b in (8, 16):
        views = []
        if o % b == 0 and i % b == 0:
            x = a.reshape(o // b, i // b, h, w, b, b)
            views += [x.transpose(0, 5, 1, 4, 2, 3), x.transpose(0, 4, 1, 5, 2, 3)]
        if o % b == 0:
            views.append(a.reshape(o // b, i, h, w, b).transpose(0, 4, 1, 2, 3))
        for v in views:
            v = v.reshape(o, i, h, w)[:t.shape[0], :t.shape[1]]
            if v.shape == t.shape:
                best = max(best, _whole(v, t))
    return best


def _rms_adds(model: Any) -> list:
    """Adds of a small scalar constant feeding a Sqrt (an unfused RMSNorm / LayerNorm's epsilon)."""
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    users = {}
    for n in model.graph.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    out = []
    for n in model.graph.node:
        if n.op_type != "Add" or not any(u.op_type == "Sqrt" for u in users.get(n.output[0], [])):
            continue
        c = [i for i in n.input if i in consts and consts[i].size == 1 and 0 < float(consts[i].reshape(-1)[0]) < 1e-3]
        if c:
            out.append((n, c[0]))
    return out


def epsilon(path: Path, k: int, eps: float, dst: Path) -> Path:
    """The ``k``-th normalisation in graph order gets ``eps``."""
    model = onnx.load(str(path))
    norms = [(n, None) for n in model.graph.node if n.op_type in NORMS] or _rms_adds(model)
    node, const = norms[k]
    if const is None:
        for a in node.attribute:
            if a.name == "epsilon":
                a.f = eps
                break
        else:
            node.attribute.append(onnx.helper.make_attribute("epsilon", eps))
    else:       # the constant may be shared by every norm: this Add gets its own
        name = f"injected_eps_{k}"
        model.graph.initializer.append(numpy_helper.from_array(np.array(eps, dtype=np.float32), name))
        node.input[list(node.input).index(const)] = name
    onnx.save(model, str(dst))
    return dst


def _set(node: Any, name: str, value: Any) -> None:
    for a in node.attribute:
        if a.name == name:
            node.attribute.remove(a)
            break
    node.attribute.append(onnx.helper.make_attribute(name, value))


def conv_dilation(path: Path, target: np.ndarray, dst: Path) -> Path:
    """The 3x3 Conv computing with ``target`` (found by content) dilates by 2, padded by 2: same shape."""
    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    convs = [n for n in model.graph.node if n.op_type in ("Conv", "FusedConv") and len(n.input) > 1
             and n.input[1] in inits and inits[n.input[1]].shape[2:] == target.shape[2:]]
    scored = [(max(_whole(inits[n.input[1]], target), _reorder_cos(inits[n.input[1]], target)), n) for n in convs]
    cos, node = max(scored, key=lambda s: s[0])
    assert cos > 0.9, "the conv is not in the file"
    _set(node, "dilations", [2, 2])
    _set(node, "pads", [2, 2, 2, 2])
    onnx.save(model, str(dst))
    return dst


def softmax_axis(path: Path, k: int, dst: Path) -> Path:
    """The ``k``-th Softmax in graph order normalises over axis -2 instead of -1 (same shape)."""
    model = onnx.load(str(path))
    node = [n for n in model.graph.node if n.op_type == "Softmax"][k]
    _set(node, "axis", -2)
    onnx.save(model, str(dst))
    return dst


def gemm_transb(path: Path, target: np.ndarray, dst: Path) -> Path:
    """The Gemm (or FusedGemm) computing with the square ``target`` weight flips transB."""
    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    gemms = [n for n in model.graph.node if n.op_type in ("Gemm", "FusedGemm") and n.input[1] in inits
             and inits[n.input[1]].size == target.size]
    cos, node = max(((_whole(inits[n.input[1]], target), n) for n in gemms), key=lambda s: s[0])
    assert cos > 0.9, "the Gemm is not in the file"
    flag = next((a.i for a in node.attribute if a.name == "transB"), 0)
    _set(node, "transB", 1 - flag)
    onnx.save(model, str(dst))
    return dst
