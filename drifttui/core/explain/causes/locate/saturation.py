"""Does ONNX Runtime's int8 kernel compute a layer's integer product exactly?  Recomputed in numpy.

A MatMulInteger / ConvInteger outputs the int32 product of its uint8 activation and int8 weight:
``sum_k (x - x_zero) * (w - w_zero)``.  Integer arithmetic has one right answer, so ONNX Runtime's
output must equal that sum recomputed exactly (numpy int64) from the same integers: the activation
the file's own DynamicQuantizeLinear made on this sample (marked as an output), the weight and the
zero points the file holds.  Where it does not, the CPU's u8s8 kernel saturated (runtime/cpu.py:
VPMADDUBSW's 16-bit pair sums on x86 without VNNI).  For the evidence, the saturating arithmetic is
also recomputed: pairs of raw products along K (k, k+1) clamped to int16, summed, the zero points
corrected after; when ORT's output equals it exactly, that is the mechanism.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import INT8_ELEMS
from drifttui.core.onnx.graph import tensor_array

INT32_OPS = ("MatMulInteger", "ConvInteger")
MAX_ELEMENTS = 64_000_000        # products recomputed per node and sample (larger: not recomputed)
I16 = (-32768, 32767)


@dataclass(frozen=True)
class NodeProduct:
    """One integer node's product on the samples tried: ORT's vs the exact one."""

    node: int                 # node index
    name: str
    op: str
    elements: int             # output elements (all samples)
    wrong: int                # ... where ORT's differs from the exact product
    max_diff: int             # max |ORT - exact| (int32 units)
    max_exact: int            # max |exact|: the scale of the product
    emulated: Optional[bool]  # ORT equals the saturating 16-bit pair sums (None: not emulated)
    unit: str = "int32"       # "int32": the product itself; "requantized": a QDQ unit's output (saturation_qdq.py)

    @property
    def saturated(self) -> bool:
        return self.wrong > 0

    @property
    def rel(self) -> float:
        """The error's size relative to the product's scale (max |d| / max |exact|)."""
        return self.max_diff / self.max_exact if self.max_exact else 0.0


def int32_nodes(index: Any) -> list[int]:
    """The file's MatMulInteger / ConvInteger nodes with a constant int8 weight and a run-time activation."""
    out = []
    for n in index.nodes:
        if n.op_type in INT32_OPS and len(n.inputs) > 1 and n.inputs[0] not in index.initializers:
            t = index.initializers.get(n.inputs[1])
            if t is not None and t.data_type in INT8_ELEMS:
                out.append(n.index)
    return out


def values_needed(index: Any, nodes: list[int]) -> list[str]:
    """The values to mark as outputs: each node's activation, its zero point, its int32 output."""
    names: list[str] = []
    for k in nodes:
        n = index.nodes[k]
        for v in (n.inputs[0], n.inputs[2] if len(n.inputs) > 2 else "", n.outputs[0]):
            if v and v not in index.initializers and v not in names:
                names.append(v)
    return names


def recompute(index: Any, nodes: list[int], runs: list[dict[str, np.ndarray]]) -> list[NodeProduct]:
    """Per node, ORT's product (``runs``: the marked values on each sample) vs the exact one."""
    out = []
    for k in nodes:
        n = index.nodes[k]
        w = tensor_array(index, n.inputs[1]).astype(np.int64)
        wz = _const(index, n.inputs[3] if len(n.inputs) > 3 else "", None)
        elements = wrong = max_diff = max_exact = 0
        emulated: Optional[bool] = True
        for vals in runs:
            if n.inputs[0] not in vals or n.outputs[0] not in vals:
                continue
            x = vals[n.inputs[0]].astype(np.int64)
            xz = _const(index, n.inputs[2] if len(n.inputs) > 2 else "", vals)
            y = vals[n.outputs[0]].astype(np.int64)
            prod = exact_product(n, x, xz, w, wz)
            if prod is None or prod[0].shape != y.shape:
                emulated = None
                continue
            exact, emul = prod
            d = np.abs(y - exact)
            elements += y.size
            wrong += int(np.count_nonzero(d))
            max_diff = max(max_diff, int(d.max()) if d.size else 0)
            max_exact = max(max_exact, int(np.abs(exact).max()) if exact.size else 0)
            if emulated is not None:
                emulated = emul is not None and bool(np.array_equal(emul, y)) and emulated
        if elements:
            out.append(NodeProduct(k, n.name, n.op_type, elements, wrong, max_diff, max_exact,
                                   emulated if wrong else None))
    return out


def exact_product(node: Any, x: np.ndarray, xz: np.ndarray, w: np.ndarray,
                  wz: np.ndarray) -> Optional[tuple[np.ndarray, Optional[np.ndarray]]]:
    """(the exact int product, the 16-bit saturating one or None) of a MatMulInteger / ConvInteger."""
    if node.op_type == "MatMulInteger":
        if x.ndim < 1 or w.ndim != 2 or x.shape[-1] != w.shape[0] or x.size * w.shape[1] > MAX_ELEMENTS:
            return None
        exact = np.matmul(x - xz, w - wz)
        emul = _pairs(x, w, xz) if np.ndim(xz) == 0 and not np.any(wz) else None
        return exact, emul
    cols = im2col(node, x, xz, w.shape)
    if cols is None:
        return None
    a, spatial = cols                       # a: [n, groups, positions, K] raw values (pads at x's zero)
    m, g = w.shape[0], a.shape[1]
    wm = w.reshape(g, m // g, -1)           # [groups, M/g, K] in (c, kernel...) order
    exact = np.einsum("ngpk,gmk->ngmp", a - xz, wm - (wz.reshape(g, m // g, 1) if np.ndim(wz) else wz))
    shape = (a.shape[0], m, *spatial)
    emul = None
    if np.ndim(xz) == 0 and not np.any(wz):
        sat = np.stack([_pairs(a[:, j], wm[j].T, xz) for j in range(g)], 1)     # [n, g, p, M/g]
        emul = np.moveaxis(sat, -1, 2).reshape(shape)
    return exact.reshape(shape), emul


def _pairs(x: np.ndarray, w: np.ndarray, xz: Any) -> np.ndarray:
    """VPMADDUBSW's arithmetic: raw u8 x s8 products summed by pairs (k, k+1) into int16 with
    saturation, the pairs summed in int32, then the activation's zero point taken out."""
    k = w.shape[0]
    if k % 2:
        x = np.concatenate([x, np.zeros((*x.shape[:-1], 1), x.dtype)], -1)
        w = np.concatenate([w, np.zeros((1, w.shape[1]), w.dtype)], 0)
    xs = x.reshape(*x.shape[:-1], -1, 2)                           # [..., K/2, 2]
    ws = w.reshape(-1, 2, w.shape[1])                              # [K/2, 2, N]
    pair = np.einsum("...ij,ijn->...in", xs, ws)                   # [..., K/2, N]
    sat = np.clip(pair, *I16).sum(-2)
    return sat - np.asarray(xz, np.int64) * w.sum(0)


def im2col(node: Any, x: np.ndarray, xz: Any, wshape: tuple[int, ...]) -> Optional[tuple[np.ndarray, tuple]]:
    """ConvInteger's columns: [n, groups, positions, C/g x kernel] from x padded with its zero point."""
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.proto.attribute}
    nd = len(wshape) - 2
    if x.ndim != nd + 2 or nd < 1 or attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return None
    kernel = list(wshape[2:])
    strides = list(attrs.get("strides", [1] * nd))
    dil = list(attrs.get("dilations", [1] * nd))
    pads = list(attrs.get("pads", [0] * 2 * nd))
    g = int(attrs.get("group", 1))
    width = [pads[i] for i in range(nd)], [pads[nd + i] for i in range(nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(*width)), constant_values=int(np.asarray(xz).reshape(-1)[0]))
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    if any(s > xp.shape[2 + i] for i, s in enumerate(span)):
        return None
    win = np.lib.stride_tricks.sliding_window_view(xp, span, axis=tuple(range(2, 2 + nd)))
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)
              + tuple(slice(None, None, d) for d in dil)]
    n, c = x.shape[:2]
    spatial = win.shape[2:2 + nd]
    positions = int(np.prod(spatial))
    if n * positions * c * int(np.prod(kernel)) * max(1, wshape[0] // g) > MAX_ELEMENTS:
        return None
    win = win.reshape(n, g, c // g, positions, -1)                  # [n, g, C/g, P, kernel]
    cols = np.ascontiguousarray(np.moveaxis(win, 3, 2)).reshape(n, g, positions, -1)
    return cols, tuple(spatial)


def _const(index: Any, name: str, vals: Optional[dict[str, np.ndarray]]) -> Any:
    if not name:
        return np.int64(0)
    if name in index.initializers:
        return tensor_array(index, name).astype(np.int64)
    if vals is not None and name in vals:
        return vals[name].astype(np.int64)
    return np.int64(0)
