"""Weight-only block quantization: onnxruntime's ``MatMulNBits`` (com.microsoft), what
``onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer`` and the LLM builders
write for int4 (or int2..int8) weights.

``MatMulNBits(A, B, scales[, zero_points][, g_idx][, bias])`` computes ``A @ W`` with ``W``
(K x N) stored per output column in blocks of ``block_size`` along K: ``B`` packs each block's
``bits``-bit integers (low bits first), ``scales`` holds one scale per block, and the zero point
is ``2^(bits-1)`` unless ``zero_points`` gives one per block (packed the same way).  The
activations stay float32: the node's only rounding is its weight's, ``+-scale/2`` per element, so
its step is the largest block scale over the largest weight (``weight_step``)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

NBITS_OPS = ("MatMulNBits",)


def _attrs(node: Any) -> dict[str, int]:
    return {a.name: a.i for a in getattr(node, "proto", node).attribute}


def _inputs(node: Any) -> list[str]:
    """A GraphIndex node's inputs or a NodeProto's."""
    return list(node.inputs if hasattr(node, "inputs") else node.input)


def _unpack(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The ``bits``-bit unsigned integers packed little-end-first in ``packed``'s bytes, the last
    axis unpacked to ``count`` values."""
    b = packed.astype(np.uint8).reshape(*packed.shape[:-1], -1)
    per = 8 // bits
    parts = [(b >> (bits * k)) & ((1 << bits) - 1) for k in range(per)]
    vals = np.stack(parts, axis=-1).reshape(*b.shape[:-1], -1)
    return vals[..., :count].astype(np.int32)


def _levels(node: Any, arrays: dict[str, np.ndarray]) -> Optional[tuple[np.ndarray, np.ndarray, int]]:
    """(q - zero point: N x blocks x block_size integers, the scales: N x blocks x 1, K); None when
    the node's inputs are not initializers (``arrays``: name -> array) or use ``g_idx`` (act-order)."""
    ins = _inputs(node)
    a = _attrs(node)
    bits, bs, K, N = a.get("bits", 4), a.get("block_size", 0), a.get("K", 0), a.get("N", 0)
    if len(ins) < 3 or ins[1] not in arrays or ins[2] not in arrays or not (bits and bs and K and N) \
            or (len(ins) > 4 and ins[4]):
        return None
    blocks = _check(node, bits, bs, K, N, arrays[ins[1]], arrays[ins[2]])
    q = _unpack(arrays[ins[1]].reshape(N, blocks, -1), bits, bs)               # N x blocks x bs
    s = arrays[ins[2]].astype(np.float32).reshape(N, blocks, 1)
    zp: Any = 1 << (bits - 1)
    if len(ins) > 3 and ins[3]:
        z = arrays.get(ins[3])
        if z is None:
            return None
        zp = (_unpack(z.reshape(N, -1), bits, blocks) if z.dtype == np.uint8 else z.reshape(N, blocks))
        zp = zp.astype(np.int32).reshape(N, blocks, 1)
    return q - zp, s, K


def _check(node: Any, bits: int, bs: int, K: int, N: int, packed: np.ndarray, scales: np.ndarray) -> int:
    """The number of blocks per column; an InputError naming the node when its attributes do not fit
    its packed weight and scales (a block_size that is not a power of 2 >= 16, or bits not 2..8)."""
    from drifttui.errors import InputError   # lazy: only for a malformed MatMulNBits

    name = getattr(node, "name", "") or "(unnamed)"
    fix = "the file is invalid: quantize it again (MatMulNBitsQuantizer) or pass the float file"
    if bits not in (2, 4, 8):
        raise InputError(f"MatMulNBits node {name!r}: bits={bits} is not 2, 4 or 8", fix)
    if bs < 16 or bs & (bs - 1) or K < 1 or N < 1:
        raise InputError(f"MatMulNBits node {name!r}: block_size={bs} (K={K}, N={N}) is not a power of 2 of "
                         "at least 16", fix)
    blocks = -(-K // bs)
    per_block = -(-bs * bits // 8)
    if packed.size != N * blocks * per_block or scales.size != N * blocks:
        raise InputError(f"MatMulNBits node {name!r}: block_size={bs}, bits={bits}, K={K}, N={N} need "
                         f"{N * blocks * per_block} packed bytes and {N * blocks} scales, the file holds "
                         f"{packed.size} and {scales.size}", fix)
    return blocks


def dequantized(node: Any, arrays: dict[str, np.ndarray]) -> Optional[np.ndarray]:
    """The float32 weight ``W`` (K x N) a MatMulNBits node computes with, or None (``_levels``)."""
    found = _levels(node, arrays)
    if found is None:
        return None
    q, s, K = found
    w = (q.astype(np.float32) * s).reshape(q.shape[0], -1)[:, :K]              # N x K
    return np.ascontiguousarray(w.T)


def weight_step(node: Any, arrays: dict[str, np.ndarray]) -> float:
    """max block scale / max |W|: the relative rounding step of the node's weight (0 if unknown);
    max |W| from each block's largest level and its scale, without the float weight."""
    found = _levels(node, arrays)
    if found is None or not found[0].size:
        return 0.0
    q, s, _ = found
    top = float(np.max(np.abs(q).max(axis=-1, keepdims=True) * np.abs(s)))
    return float(np.max(np.abs(s))) / top if top else 0.0


def bits_of(node: Any) -> int:
    return _attrs(node).get("bits", 4)


def float_weight(node: Any, arrays: dict[str, np.ndarray], torch_tensors: dict[str, np.ndarray]) -> Optional[np.ndarray]:
    """The float32 ``W`` (K x N) to keep the node in float32 with: the torch parameter the file
    rounded (matched by content: within one block step everywhere), else the dequantized one."""
    w = dequantized(node, arrays)
    if w is None:
        return None
    # one step, not half: a symmetric quantizer's scale is max|w| / 2^(bits-1), and the positive
    # extreme, 2^(bits-1), is clipped to 2^(bits-1) - 1
    step = float(np.max(np.abs(arrays[_inputs(node)[2]]))) * (1 + 1e-6) + 1e-7
    for t in torch_tensors.values():
        if t.size != w.size or t.ndim != 2:
            continue
        for cand in [c for c in (t.T, t) if c.shape == w.shape]:
            if float(np.max(np.abs(cand.astype(np.float32) - w))) <= step:
                return np.ascontiguousarray(cand, dtype=np.float32)
    return w


def block_steps(node: Any, arrays: dict[str, np.ndarray]) -> Optional[np.ndarray]:
    """Each element's rounding step in ``dequantized``'s K x N layout: its block's |scale|."""
    found = _levels(node, arrays)
    if found is None:
        return None
    q, s, K = found
    step = np.broadcast_to(np.abs(s), q.shape).reshape(q.shape[0], -1)[:, :K]
    return np.ascontiguousarray(step.T.astype(np.float32))
