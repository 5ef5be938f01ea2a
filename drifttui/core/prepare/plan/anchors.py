"""Anchors of a reference export in a deployed file: the weights, matched by content, never by name.

A deployed file's initializers are the reference's, equal or transformed: transposed or reshaped
(a Gemm's weight), scaled per output channel (a BatchNorm folded into its Conv), or close in
direction (a drifted or reduced-precision copy).  Each value's anchor set (the anchors it is
computed from, as a bitmask) is what transfer.py compares, with the shape, before any number.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import INT8_ELEMS, LOW_PRECISION_ELEM
from drifttui.core.onnx.graph import tensor_array
from drifttui.core.onnx.nchwc import blocked_weight, weight_views
from drifttui.core.onnx.nbits import NBITS_OPS, dequantized
from drifttui.core.onnx.qweights import INTEGER_OPS, int8_weights

MIN_COS = 0.9              # a drifted weight still points the reference's way
FLOAT_TYPES = (1, 10, 11, 16)


def _informative(a: np.ndarray) -> bool:
    """A tensor worth anchoring on: not a scalar and not constant-valued (a zero bias, a ones scale:
    an optimiser removes their Add / Mul, so a value's anchor set would lose them for no change)."""
    return a.size >= 2 and bool(np.isfinite(a).all()) and float(a.min()) != float(a.max())


def _float_arrays(index: Any) -> dict[str, np.ndarray]:
    """Every informative float constant tensor (initializers and Constant nodes' values, through
    ``GraphIndex.constant_tensors``), and the dequantized int8 / int4 weights."""
    out = {}
    for name, t in index.constant_tensors().items():
        if t.data_type in FLOAT_TYPES:
            arr = tensor_array(index, name)      # external data read where it lies
            if arr is None:
                continue
            a = arr.astype(np.float32)
            if _informative(a):
                out[name] = a
    out.update(_int8_weights(index))
    out.update(_nbits_weights(index))
    return out


def _nbits_weights(index: Any) -> dict[str, np.ndarray]:
    """The int4 blocks of a MatMulNBits node, dequantized to the K x N weight it multiplies by: a
    rounded copy of the reference MatMul's weight, matched like one."""
    out: dict[str, np.ndarray] = {}
    for n in index.nodes:
        if n.op_type not in NBITS_OPS or len(n.inputs) < 3 or index.constant_tensor(n.inputs[1]) is None:
            continue
        arrays = {i: a for i in n.inputs[1:4] if i and (a := tensor_array(index, i)) is not None}
        w = dequantized(n, arrays)
        if w is not None and _informative(w):
            out[n.inputs[1]] = w
    return out


def _int8_weights(index: Any) -> dict[str, np.ndarray]:
    """The (u)int8 weights of a quantized file, dequantized with the scale and zero point their
    reader takes them with (a DequantizeLinear, or a QLinear* op's (w, scale, zero point) triple):
    a rounded copy of the reference's float weight, matched like one (closest by direction)."""
    out = {w.name: w.values for w in int8_weights(index) if _informative(w.values)}
    out.update({n: a for n, a in integer_operands(index).items() if n not in out and _informative(a)})
    return out


def integer_operands(index: Any) -> dict[str, np.ndarray]:
    """The constant (u)int8 operands of MatMulInteger / ConvInteger less their zero point, either side: an anchor
    is matched by direction, so the scale (a per-tensor product after the op, which of the two constants a
    Mul of both scales is each operand's is not stated) is not needed.  ``quantize_dynamic`` quantizes a
    constant *left* operand too (DeBERTa's relative embeddings, read by ``pos_key_proj``'s MatMul) and keeps its
    float copy where TorchScript's Identity hands it on: only the float copy anchored, so the values of layer 0
    had an anchor in the reference that their file values lacked (layer 0 ``fused``, a false DRIFT IN THE INT8
    FILE)."""
    out: dict[str, np.ndarray] = {}
    for node in index.nodes:
        if node.op_type not in INTEGER_OPS:
            continue
        for k in (0, 1):
            name = node.inputs[k] if len(node.inputs) > k else ""
            t = index.constant_tensor(name) if name else None
            if t is None or t.data_type not in INT8_ELEMS or len(t.dims) < 2 or name in out:
                continue
            zero = node.inputs[2 + k] if len(node.inputs) > 2 + k else ""
            z = tensor_array(index, zero) if zero else None
            z = np.zeros((), np.float32) if z is None else z
            q = tensor_array(index, name)
            if q is None or np.size(z) > 1:
                continue        # a per-row zero point of the left operand: not a plain tensor view
            out[name] = q.astype(np.float32) - np.float32(np.asarray(z).reshape(()))
    return out


def _key(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a, dtype=np.float32).tobytes()).hexdigest()


def _variants(a: np.ndarray) -> list[tuple[str, np.ndarray]]:
    out = [("equal", a.reshape(-1))]
    if a.ndim == 2:
        out.append(("transposed", a.T.reshape(-1)))
    return out


def _views(index: Any, name: str, a: np.ndarray) -> list[np.ndarray]:
    """The tensor as its readers use it: a Conv weight ORT stored in its blocked NCHWc layout is read
    back in OIHW (every layout it may be in; onnx/nchwc.py), any other as it is."""
    return weight_views(a) if blocked_weight(index, name) else [a]


def weights_of(index: Any) -> dict[str, np.ndarray]:
    """The tensors anchors are matched on: informative float weights, int8 / int4 ones dequantized."""
    return _float_arrays(index)


def match_anchors(ref: Any, dep: Any, d_arr: Optional[dict[str, np.ndarray]] = None) -> tuple[dict[str, str], dict[str, int]]:
    """Deployed initializer -> reference initializer it is (a transform of); unique contents only.
    ``d_arr``: the deployed file's ``weights_of``, when the caller has them already."""
    r_arr, d_arr = _float_arrays(ref), (d_arr if d_arr is not None else _float_arrays(dep))
    by_key: dict[str, list[str]] = {}
    for name, a in r_arr.items():
        by_key.setdefault(_key(a.reshape(-1)), []).append(name)
    # reference tensors of one content are one anchor (twin_names): a deployed copy of it anchors on the first
    unique = {k: v[0] for k, v in by_key.items()}
    found: dict[str, str] = {}
    how: dict[str, int] = {}
    views = {name: _views(dep, name, a) for name, a in d_arr.items()}
    for name, a in d_arr.items():
        for kind, flat in (kv for view in views[name] for kv in _variants(view)):
            r = unique.get(_key(flat))
            if r is not None:
                found[name] = r
                how[kind] = how.get(kind, 0) + 1
                break
    # a reference weight can anchor several deployed tensors: its twins (one content held several times, a drift
    # planted in one copy leaves the other equal), or a float copy and an int8 one (quantize_dynamic quantizes
    # a shared weight where a MatMul reads it, not where TorchScript's Identity hands it to the second call)
    left_r = {n: a for n, a in r_arr.items() if unique.get(_key(a.reshape(-1))) == n}
    by_size: dict[int, list[str]] = {}
    for n, a in left_r.items():
        by_size.setdefault(a.size, []).append(n)
    for name, a in d_arr.items():
        if name in found or a.size < 4:
            continue
        best, best_kind, best_cos = None, "", 0.0
        for r in by_size.get(a.size, []):
            ra = left_r[r]
            for kind, cos in (kc for view in views[name] for kc in _similarities(ra, view)):
                if cos > best_cos:
                    best, best_kind, best_cos = r, kind, cos
        if best is not None and best_cos >= MIN_COS:
            found[name] = best
            if any(dep.nodes[c].op_type in NBITS_OPS for c in dep.consumers.get(name, [])):
                best_kind = "int4 blocks, dequantized"
            elif dep.constant_tensor(name).data_type in INT8_ELEMS:
                best_kind = "int8, dequantized"
            how[best_kind] = how.get(best_kind, 0) + 1
    return found, how


def twin_names(ref: Any) -> dict[str, str]:
    """Reference weight -> the first reference weight of the same content, for those that have one.

    The dynamo exporter writes a transposed Linear weight once per call of a shared module (ALBERT's one
    layer, called for every layer): both are the model's one weight, so they are one anchor.  Left out as
    ambiguous, the Linear had no anchor, and in the transformers optimizer's file (its bias moved into a
    FastGelu) the second call's bias-less MatMul was paired with it: a false DRIFT at ``ffn`` (call 2)."""
    first: dict[str, str] = {}
    twins: dict[str, str] = {}
    for name, a in _float_arrays(ref).items():
        k = _key(a.reshape(-1))
        if k in first:
            twins[name] = first[k]
        else:
            first[k] = name
    return twins


@dataclass
class PackedBlock:
    """One block of a deployed initializer that concatenates reference ones, and how far its content
    is from the reference tensor it packs (through the view it is stored in: as is or transposed).
    A block the tool copied is equal; one that is not is a weight the file changed."""

    tensor: str          # the deployed initializer
    index: int           # the block's position in it
    count: int           # how many blocks it packs
    ref: str             # the reference initializer
    max_abs: float       # max |block - reference| (the reference's layout)
    scale: float         # max |reference|
    rounding: float      # the relative rounding of the deployed tensor's type (a float16 copy differs by it)


def match_concatenated(ref: Any, dep: Any, found: dict[str, str]) -> tuple[dict[str, list[str]], list[PackedBlock]]:
    """Deployed initializers that are a concatenation of reference ones (the transformers optimizer's
    Attention packs the Q, K and V weights, and their biases, in one tensor, each block maybe
    transposed): deployed name -> the reference names of its blocks, in order, and each block's
    content difference.  A block equals its reference tensor or points its way (cos >= MIN_COS,
    same shape: a drifted copy); each reference tensor is used once."""
    r_arr, d_arr = _float_arrays(ref), _float_arrays(dep)
    taken = set(found.values())
    by_size: dict[int, list[str]] = {}
    for n, a in r_arr.items():
        if n not in taken:
            by_size.setdefault(a.size, []).append(n)
    out: dict[str, list[str]] = {}
    blocks: list[PackedBlock] = []
    for name, a in d_arr.items():
        if name in found or a.ndim > 2:
            continue
        for axis in range(a.ndim):
            parts = _blocks(a, axis, by_size, r_arr, taken)
            if parts:
                out[name] = [r for r, _ in parts]
                taken.update(out[name])
                for k, (r, block) in enumerate(parts):
                    ra = r_arr[r]
                    blocks.append(PackedBlock(name, k, len(parts), r, float(np.max(np.abs(block - ra), initial=0.0)),
                                              float(np.max(np.abs(ra), initial=0.0)),
                                              LOW_PRECISION_ELEM.get(dep.constant_tensor(name).data_type, 0.0)))
                break
    return out, blocks


def _blocks(a: np.ndarray, axis: int, by_size: dict, r_arr: dict, taken: set) -> Optional[list[tuple[str, np.ndarray]]]:
    """[(reference name, the block in the reference's layout)] when ``a`` splits into k of them."""
    for k in (3, 2, 4):
        if a.shape[axis] % k:
            continue
        parts: list[tuple[str, np.ndarray]] = []
        for block in np.split(a, k, axis=axis):
            best, best_cos, best_view = None, MIN_COS, None
            for r in by_size.get(block.size, []):
                if r in taken or any(r == p for p, _ in parts):
                    continue
                ra = r_arr[r]
                for view, back in ((ra, block), (ra.T, block.T)) if ra.ndim == 2 else ((ra, block),):
                    if view.shape == block.shape:
                        cos = _cos(view.reshape(-1), block.reshape(-1))
                        if cos >= best_cos:
                            best, best_cos, best_view = r, cos, back.reshape(ra.shape)
            if best is None:
                break
            parts.append((best, best_view))
        if len(parts) == k:
            return parts
    return None


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    """The cosine in float64: a mask buffer of float32's lowest (-3.4e38) overflows a float32 norm; a tensor with
    inf or NaN has no cosine (0)."""
    x, y = x.astype(np.float64, copy=False), y.astype(np.float64, copy=False)
    with np.errstate(all="ignore"):
        nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
        cos = float(np.dot(x, y) / (nx * ny)) if nx > 0 and ny > 0 else 0.0
    return cos if np.isfinite(cos) else 0.0


def _similarities(r: np.ndarray, d: np.ndarray) -> list[tuple[str, float]]:
    out = []
    if r.shape == d.shape and r.ndim >= 2:
        rr, dd = r.reshape(r.shape[0], -1), d.reshape(d.shape[0], -1)
        rows = [abs(_cos(rr[i], dd[i])) for i in range(rr.shape[0])]
        out.append(("scaled per output channel" if min(rows) > 0.999 else "close", float(np.mean(rows))))
    flat_r = r.reshape(-1)
    out.append(("close", abs(_cos(flat_r, d.reshape(-1)))))
    if r.ndim == 2 and r.T.size == d.size:
        out.append(("close", abs(_cos(r.T.reshape(-1), d.reshape(-1)))))
    return out


def topo_order(index: Any) -> list[int]:
    """Node indices producers first (a float16 converter's file is not sorted)."""
    indeg = [0] * len(index.nodes)
    users: dict[int, list[int]] = {}
    for n in index.nodes:
        for v in set(n.inputs):
            p = index.producer.get(v)
            if p is not None and p != n.index:
                indeg[n.index] += 1
                users.setdefault(p, []).append(n.index)
    ready = [i for i, d in enumerate(indeg) if d == 0]
    order = []
    while ready:
        i = ready.pop()
        order.append(i)
        for u in users.get(i, []):
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
    seen = set(order)
    order.sort()
    return order + [i for i in range(len(index.nodes)) if i not in seen]


def anchor_bits(ref: Any, dep: Any, anchors: dict[str, str], packed: dict[str, list[str]],
                twins: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """One bit per anchor, reference names -> bit and deployed names -> bits: each matched reference weight
    (its twins of the same content share its bit), each packed tensor the sum of its blocks', each graph input
    (by position) its own."""
    bit_of: dict[str, int] = {}
    for r in [*anchors.values(), *(r for parts in packed.values() for r in parts)]:
        bit_of.setdefault(r, len(bit_of))
    r_bits = {r: 1 << b for r, b in bit_of.items()}
    r_bits.update({r: r_bits[c] for r, c in twins.items() if c in r_bits})
    d_bits = {d: r_bits[r] for d, r in anchors.items()}
    for d, parts in packed.items():
        d_bits[d] = sum(r_bits[r] for r in set(parts))
    for k, (ri, di) in enumerate(zip(ref.graph_inputs, dep.graph_inputs)):
        b = 1 << (len(bit_of) + k)
        r_bits[ri], d_bits[di] = b, b
    return r_bits, d_bits


def anchor_masks(index: Any, bits: dict[str, int]) -> dict[str, int]:
    """Each value's anchor set as a bitmask: the anchors it is computed from."""
    mask: dict[str, int] = dict(bits)
    for ni in topo_order(index):
        n = index.nodes[ni]
        m = 0
        for v in n.inputs:
            m |= mask.get(v, 0)
        for o in n.outputs:
            if o:
                mask[o] = mask.get(o, 0) | m
    return mask


def match_weights(ref: Any, dep: Any, d_arr: Optional[dict[str, np.ndarray]] = None) -> tuple:
    """(anchors, how, packed, blocks): the deployed weights matched to the reference's by content."""
    anchors, how = match_anchors(ref, dep, d_arr)
    packed, blocks = match_concatenated(ref, dep, anchors)
    return anchors, how, packed, blocks
