"""The closest deployed value to one reference value among its candidates (matching.py asks it for
each wanted value, match_order.py again for a value that lost its first choice): the same anchors, or
a subset of them that is equal; a value in another axis order compared through the permutation that
makes it equal, never raw."""
from __future__ import annotations

import itertools
from typing import Any, Optional

import numpy as np

from drifttui.core.prepare.plan.closeness import EQUAL_RTOL, Match, err as _err, is_blank

NEAR_TIE = 1.25            # lossy candidates this close to the closest are told apart by their op (``closest``)
UNRELATED = 0.5            # a closest candidate this far (relative to the scale) carries nothing of the value
CLEAR = 4.0                # a permuted lossy candidate is taken over it when this many times closer


def squeezed(shape: tuple) -> tuple:
    """A shape without its 1-dims: [10, 32] (a Gemm's flattened batch) carries [1, 10, 32]."""
    return tuple(int(d) for d in shape if d != 1)


def layout_free(shape: tuple) -> tuple:
    """The key of a value's candidates: its dims in any order (a transposed value is one too)."""
    return tuple(sorted(squeezed(shape)))


def probe(a: np.ndarray) -> np.ndarray:
    flat = a.reshape(-1)
    step = max(1, flat.size // 64)
    return flat[::step][:64].astype(np.float64)


def closest(a: np.ndarray, mask: int, cands: list[str], dep_vals: dict[str, np.ndarray], d_mask: dict[str, int],
            probes: dict[str, np.ndarray], prefer: Optional[Any] = None) -> Optional[Match]:
    """The closest candidate with the same anchors, or one with a subset of them that is equal
    (an optimiser dropped an Add of zeros, a Mul by ones): losing an anchor otherwise means the
    value is not the module's output (a Linear's MatMul whose bias a BiasGelu took).  A candidate
    in another layout (ORT's transpose optimiser moved a Transpose past it) is compared through
    the permutation that makes it equal, never raw: :func:`permuted`.

    ``prefer(value)``: among near-equal candidates of a lossy file (none exact, within
    ``NEAR_TIE`` of the closest), the one computed by the reference value's kind of op: a
    LayerNorm that is almost the identity on its input (seeded random weights) is its own output,
    not the residual Add before it."""
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    bound = EQUAL_RTOL * max(scale, 1e-12)
    pa = probe(a)
    best: Optional[Match] = None
    liked: Optional[Match] = None
    blank = is_blank(a)
    for d in cands:
        dm = d_mask.get(d, 0)
        same = dm == mask
        if not same and (dm & ~mask or not dm or blank):
            continue
        b = dep_vals[d]
        if b.dtype.kind != a.dtype.kind and not (b.dtype.kind == "f" and a.dtype.kind == "f"):
            continue
        perm: Optional[tuple] = None
        if squeezed(b.shape) == squeezed(a.shape):
            if not same and (probes[d].size != pa.size or np.max(np.abs(probes[d] - pa), initial=0.0) > bound):
                continue
            err = _err(a, b, scale)
            if err > EQUAL_RTOL and same and len(set(a.shape)) < a.ndim:      # square dims: maybe transposed
                perm, err = permuted(a, b, scale, bound) or (None, err)
        else:
            found = permuted(a, b, scale, bound) if same else None
            if found is None:
                continue
            perm, err = found
        if not same and err > EQUAL_RTOL:
            continue
        if best is None or err < best.err:
            best = Match(d, err, err <= EQUAL_RTOL, perm)
        if prefer is not None and same and prefer(d) and (liked is None or err < liked.err):
            liked = Match(d, err, err <= EQUAL_RTOL, perm)
    if best is not None and liked is not None and (liked.err <= best.err
                                                   or not best.exact and liked.err <= NEAR_TIE * best.err):
        return liked      # exact ties too: a pool over a 1x1 map holds its input's numbers, its own node is the pool
    if best is None or best.err > UNRELATED:
        return lossy_permuted(a, [d for d in cands if d_mask.get(d, 0) == mask], dep_vals, scale, best, prefer)
    return best


def lossy_permuted(a: np.ndarray, cands: list[str], dep_vals: dict[str, np.ndarray], scale: float,
                   best: Optional[Match], prefer: Optional[Any] = None) -> Optional[Match]:
    """A lossy file's value in another axis order (an int8 file whose layout ORT's transpose optimiser changed: a
    ConvNeXt block's residual Add computed channels-last, where every dim is 16): when the closest candidate is
    unrelated (over ``UNRELATED``, or none), the candidate with the same anchors that one permutation makes
    ``CLEAR`` times closer than it, and within ``UNRELATED``; of near ties (``NEAR_TIE``), one computed by the
    reference value's kind of op (``prefer``: the Add, not the LayerNorm after it that is almost the identity).
    ``permuted`` pairs only equal values; a quantized file's never are."""
    bar = min(UNRELATED, best.err / CLEAR) if best is not None else UNRELATED
    found: list[Match] = []
    for d in cands:
        if dep_vals[d].dtype.kind == "f" and a.dtype.kind == "f":
            found += [Match(d, err, err <= EQUAL_RTOL, p) for p, err in _permutations(a, dep_vals[d], scale)
                      if err < bar]
    if not found:
        return best
    top = min(found, key=lambda m: m.err)
    liked = [m for m in found if prefer is not None and prefer(m.value) and m.err <= NEAR_TIE * top.err]
    return min(liked, key=lambda m: m.err) if liked else top


def permuted(a: np.ndarray, b: np.ndarray, scale: float, bound: float) -> Optional[tuple[tuple, float]]:
    """(perm, err) when ``b`` transposed by ``perm`` (numpy's and ONNX Transpose's meaning) equals
    ``a``: the same values in another axis order.  Tried only when the two hold the same values
    (max, min, mean, mean square: a permutation keeps them), so a drifted value is never paired
    through a permutation."""
    if not _permutable(a, b):
        return None
    x, y = a.astype(np.float64), b.astype(np.float64)
    stats = [(x.max(), y.max(), bound), (x.min(), y.min(), bound), (x.mean(), y.mean(), bound),
             ((x * x).mean(), (y * y).mean(), 2 * bound * max(scale, 1e-12))]
    if any(abs(p - q) > tol for p, q, tol in stats):
        return None
    equal = [(p, err) for p, err in _permutations(a, b, scale) if err <= EQUAL_RTOL]
    return min(equal, key=lambda f: f[1]) if equal else None


def _permutable(a: np.ndarray, b: np.ndarray) -> bool:
    return b.ndim == a.ndim and a.ndim <= 6 and sorted(b.shape) == sorted(a.shape) and a.size > 0


def _permutations(a: np.ndarray, b: np.ndarray, scale: float) -> list[tuple[tuple, float]]:
    """(perm, relative error of ``b`` transposed by it against ``a``) for every non-identity permutation that gives
    ``b`` ``a``'s shape."""
    if not _permutable(a, b):
        return []
    same = tuple(range(a.ndim))
    return [(p, _err(a, np.transpose(b, p), scale)) for p in itertools.permutations(same)
            if p != same and tuple(b.shape[i] for i in p) == tuple(a.shape)]


def op_kind(index: Any, value: str) -> str:
    """The kind of op that computes ``value``, through a DequantizeLinear (a quantized file's
    float value, or a drifttui view of one) and with the quantized forms named as the float op:
    QLinearAdd -> Add, QGemm -> Gemm, MatMulInteger -> MatMul, MatMulNBits -> MatMul."""
    p = index.producer.get(value)
    if p is not None and index.nodes[p].op_type == "DequantizeLinear":
        p = index.producer.get(index.nodes[p].inputs[0])
    if p is None:
        return ""
    op = index.nodes[p].op_type
    for prefix in ("QLinear", "Q"):
        if op.startswith(prefix) and op[len(prefix):len(prefix) + 1].isupper():
            return op[len(prefix):]
    return {"MatMulInteger": "MatMul", "MatMulNBits": "MatMul", "ConvInteger": "Conv"}.get(op, op)


def preferring(ref: Any, dep: Any, r: str) -> Optional[Any]:
    """``closest``'s ``prefer`` for reference value ``r``: a deployed value computed by ``r``'s kind of op."""
    kind = op_kind(ref, r)
    return (lambda d: op_kind(dep, d) == kind) if kind else None
