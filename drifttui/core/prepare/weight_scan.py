"""One pass over an initializer: its statistics (min, max, mean, std) and its largest difference from
the torch parameter it stands for, read in 2-D tiles.

A 1B-parameter model's weights are 4.2 GB read from the mapped external-data file.  The inspector's
figures used to read each weight four times for the statistics and twice more for the difference,
and the difference of a weight the exporter stored transposed (a Linear as MatMul) walked the torch
parameter down its columns: 18.5 s of a 35 s map.  Here each tile of the initializer is read once,
while it is in cache, for every figure; a parameter stored transposed is compared in square
blocks, each read as a transposed view that stays in cache, instead of down its columns.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

_ROWS = 256          # rows of a tile
_TILE = 1 << 20      # elements of a tile (4 MB in float32): a big weight is never copied whole
_SIDE = 256          # a square tile's side, for a weight compared with its transpose


class Scratch:
    """Work buffers kept across scans (one per use and type): a background scan of every weight
    allocates them once, not per weight (each 4 MB block freed raises glibc's mmap threshold, and
    the allocations of a session packing at that moment then stay in the heap)."""

    def __init__(self) -> None:
        self._bufs: dict[tuple[str, Any], np.ndarray] = {}

    def get(self, use: str, dtype: Any, n: int) -> np.ndarray:
        key = (use, np.dtype(dtype))
        buf = self._bufs.get(key)
        if buf is None or buf.size < n:
            buf = self._bufs[key] = np.empty(max(n, _TILE), dtype)
        return buf[:n]


@dataclass
class _Moments:
    """min, max and the moments of the tiles seen so far, combined exactly (Chan et al.): each
    tile's sum of squares is taken about its own mean, so no cancellation at any size."""
    n: int = 0
    lo: float = float("inf")
    hi: float = float("-inf")
    mean: float = 0.0
    m2: float = 0.0
    scratch: Optional[Scratch] = None

    def add(self, t: np.ndarray) -> None:
        k = t.size
        lo, hi = float(t.min()), float(t.max())
        with np.errstate(over="ignore", invalid="ignore"):
            m = float(t.sum()) / k
            self.scratch = self.scratch or Scratch()
            d = self.scratch.get("moments", t.dtype, k)          # no fresh pages per tile
            np.subtract(t, t.dtype.type(m), out=d.reshape(t.shape))
            m2 = float(np.dot(d, d))
        if not (np.isfinite(m) and np.isfinite(m2)) and t.dtype != np.float64 and np.isfinite(hi - lo):
            # float32 sums overflow on values near its limits (a mask of finfo.min): float64 then
            t = t.astype(np.float64)
            m = float(t.sum()) / k
            d = (t - m).ravel()
            m2 = float(np.dot(d, d))
        n = self.n + k
        delta = m - self.mean
        self.m2 += m2 + delta * delta * self.n * k / n
        self.mean += delta * k / n
        self.n, self.lo, self.hi = n, min(self.lo, lo), max(self.hi, hi)

    def result(self) -> tuple[float, float, float, float]:
        return self.lo, self.hi, self.mean, float(np.sqrt(self.m2 / self.n)) if self.n else 0.0


def _rows(a: Any) -> Any:
    """A 2-D view: (first dimension, the rest), a 0-D or 1-D array as one row."""
    return a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(1, -1)


def _tiles(shape: tuple[int, int]):
    rows, cols = shape
    width = min(cols, max(1, _TILE // min(rows, _ROWS)))
    height = max(_ROWS, _TILE // max(1, width)) if width == cols else _ROWS
    for r in range(0, rows, height):
        for c in range(0, cols, width):
            yield slice(r, r + height), slice(c, c + width)


def _widened(t: np.ndarray) -> np.ndarray:
    """float32 and float64 as they are; float16 (a sum would overflow) and integers (they wrap) as
    float64."""
    return t if t.dtype in (np.float32, np.float64) else t.astype(np.float64)


class _Reference:
    """The torch side of a comparison, tile by tile: ``p`` as the initializer holds it, or its
    transpose (read as a transposed view of a square block: both sides stay in cache)."""

    def __init__(self, p: np.ndarray, transposed: bool):
        self.transposed = transposed
        self.src = np.ascontiguousarray(p) if transposed else _rows(p)

    def tile(self, rs: slice, cs: slice) -> np.ndarray:
        return self.src[cs, rs].T if self.transposed else self.src[rs, cs]


def _square_tiles(shape: tuple[int, int]):
    """Square blocks (``_SIDE`` x ``_SIDE``): a weight compared with its transpose is read in
    blocks that fit in cache on both sides (ATen's copy of a transposed band was 60 % of the scan
    on a 1B model)."""
    rows, cols = shape
    for r in range(0, rows, _SIDE):
        for c in range(0, cols, _SIDE):
            yield slice(r, r + _SIDE), slice(c, c + _SIDE)


class _Diff:
    """max |x - y| over the tiles, in the arrays' own type when they share a float type (the
    difference of two float32 values is within one rounding of the exact one), float64 otherwise;
    into one buffer (a fresh temporary per tile is fresh pages to fault in)."""

    def __init__(self, scratch: Scratch) -> None:
        self.worst = 0.0
        self.scratch = scratch

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        if not x.size:
            return
        if not (x.dtype == y.dtype and x.dtype.kind == "f"):
            x, y = x.astype(np.float64), y.astype(np.float64)
        out = self.scratch.get("diff", x.dtype, x.size).reshape(x.shape)
        np.subtract(x, y, out=out)
        np.abs(out, out=out)
        self.worst = max(self.worst, float(out.max()))


def scan(a: np.ndarray, p: Optional[np.ndarray] = None, transposed: bool = False, stats: bool = True,
         pace: Optional[Callable[[], None]] = None,
         scratch: Optional[Scratch] = None) -> tuple[Optional[tuple[float, float, float, float]], Optional[float]]:
    """-> ((min, max, mean, std) of ``a`` or None, max |a - p| or None), in one pass over ``a``.
    ``p`` has ``a``'s shape, or its transpose when ``transposed`` (2-D).  ``pace`` is called before
    each tile (a background scan waits there while the run's foreground work holds the cores);
    ``scratch``: the work buffers, shared by the scans of one pass over the weights."""
    mine = _rows(a)
    ref = _Reference(p, transposed) if p is not None else None
    scratch = scratch or Scratch()
    moments = _Moments(scratch=scratch) if stats else None
    diff = _Diff(scratch)
    for rs, cs in (_square_tiles if transposed else _tiles)(mine.shape):
        if pace is not None:
            pace()
        t = mine[rs, cs]
        if moments is not None:
            moments.add(_widened(t))
        if ref is not None:
            diff.add(ref.tile(rs, cs), t)
    return (moments.result() if moments is not None else None), (diff.worst if ref is not None else None)
