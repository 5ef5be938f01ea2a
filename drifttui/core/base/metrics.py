"""Float32 comparison metrics, computed per sample and aggregated as samples stream.

Per sample we keep a handful of running sums per compared output (never the tensors).  The
engine compares *without* a tolerance: every statistic it keeps is tolerance-independent
(max |d|, the layer's scale max |torch|, sums, dots, the error spread, NaN/shape mismatches),
so that the decide stage can apply any atol/rtol exactly afterwards (``Stats.fails_at``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.base.tolerance import bound, rtol_floor


@dataclass
class Stats:
    """Sufficient statistics of one comparison (one or more outputs) in one sample."""

    n: int = 0
    sum_abs: float = 0.0
    sum_sq: float = 0.0
    max_abs: float = 0.0
    max_t: float = 0.0
    dot: float = 0.0
    norm_t: float = 0.0
    norm_o: float = 0.0
    n_out: int = 0                  # elements over the tolerance given to compare() (0 without one)
    nan_mismatch: int = 0
    # of nan_mismatch: torch finite past the file dtype's largest finite number (float16: 65504), the file
    # infinite on the same side: an overflow; ``overflow_limit`` that number (0: none)
    overflow: int = 0
    overflow_limit: float = 0.0
    shape_mismatch: bool = False
    n_spread: int = 0               # elements whose |d| is at least half of max |d| (tolerance-free)
    # float16 / bfloat16 comparisons: the floor of the relative tolerance (core/tolerance.py)
    rfloor: float = 0.0
    # (max |d|, max |t|, rtol floor) of each comparison merged by add(): each keeps its own scale
    pairs: tuple[tuple[float, float, float], ...] = ()
    merged: bool = False
    # max |d| per channel along ``channel_axis`` (compare(..., channel_axis=...)); None when not asked
    # for, or when values were not finite.  A merged comparison keeps its first output's channels.
    channels: Optional[np.ndarray] = None
    channel_axis: int = 1

    def bounds(self) -> tuple[tuple[float, float, float], ...]:
        """(max |d|, max |t|, rtol floor) per comparison this holds: what any tolerance is decided on."""
        if self.merged:
            return self.pairs
        return ((self.max_abs, self.max_t, self.rfloor),) if self.n or self.shape_mismatch else ()

    def add(self, other: "Stats") -> None:
        self.pairs = self.bounds() + other.bounds()
        self.merged = True
        self.n += other.n
        self.sum_abs += other.sum_abs
        self.sum_sq += other.sum_sq
        self.max_abs = max(self.max_abs, other.max_abs)
        self.max_t = max(self.max_t, other.max_t)
        self.dot += other.dot
        self.norm_t += other.norm_t
        self.norm_o += other.norm_o
        self.n_out += other.n_out
        self.n_spread += other.n_spread
        self.nan_mismatch += other.nan_mismatch
        self.overflow += other.overflow
        self.overflow_limit = max(self.overflow_limit, other.overflow_limit)
        self.shape_mismatch |= other.shape_mismatch
        if self.channels is None and other.channels is not None:
            self.channels, self.channel_axis = other.channels, other.channel_axis

    @property
    def max_rel(self) -> float:
        if self.max_t > 0:
            return self.max_abs / self.max_t
        return 0.0 if self.max_abs == 0 else math.inf

    @property
    def cosine(self) -> float:
        if self.norm_t == 0 and self.norm_o == 0:
            return 1.0
        if self.norm_t == 0 or self.norm_o == 0:
            return 0.0
        return float(self.dot / math.sqrt(self.norm_t * self.norm_o))

    @property
    def mean_abs(self) -> float:
        return self.sum_abs / self.n if self.n else 0.0

    @property
    def rmse(self) -> float:
        return math.sqrt(self.sum_sq / self.n) if self.n else 0.0

    @property
    def frac_out(self) -> float:
        return self.n_out / self.n if self.n else 0.0

    @property
    def sqnr_db(self) -> float:
        """Signal-to-noise ratio of the comparison in dB, 10 log10(sum t^2 / sum d^2), as
        onnxruntime's qdq_loss_debug computes it (inf: identical).  An element finite on one side only is
        infinite noise: -inf (the sums hold the finite pairs alone, and read as a small loss)."""
        if self.nan_mismatch > 0:
            return -math.inf
        if self.sum_sq <= 0:
            return math.inf
        ratio = self.norm_t / self.sum_sq         # an error near float32's max squares to inf: ratio 0
        if math.isnan(ratio):
            return math.nan
        return 10.0 * math.log10(ratio) if ratio > 0 else -math.inf

    @property
    def spread(self) -> float:
        """Fraction of elements carrying the error: |d| >= max|d| / 2 (near 0: a few elements)."""
        return self.n_spread / self.n if self.n else 0.0

    def fails(self) -> bool:
        """At the tolerance given to :func:`compare`."""
        return self.n_out > 0 or self.nan_mismatch > 0 or self.shape_mismatch

    def fails_at(self, atol: float, rtol: float, floor: bool = True) -> bool:
        """Whether any element fails ``|d| <= atol + rtol * max|t|`` (each merged comparison at its
        own scale): exact from the stored scalars, since an element over the bound exists exactly
        when the largest |d| is over it.  ``floor=False``: without the dtype floor (a budget measured
        for this very comparison replaces it, decide/stage.py)."""
        return self.shape_mismatch or self.nan_mismatch > 0 or \
            any(not d <= bound(atol, rtol, t, f if floor else 0.0) for d, t, f in self.bounds())  # NaN: never within


def elementwise_gap(a: np.ndarray, b: np.ndarray) -> float:
    """The largest |a - b| of two tensors of one shape, an equal pair (equal infinities, NaN against NaN) counting
    0 and an unequal non-finite pair inf (``-inf - -inf`` is NaN, which ``max`` would otherwise report)."""
    if not a.size:
        return 0.0
    x, y = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.where((x == y) | (np.isnan(x) & np.isnan(y)), 0.0, np.abs(x - y))
    return float(np.nan_to_num(d, nan=np.inf, posinf=np.inf).max())


def channel_axis_of(shape: tuple[int, ...], cls: str = "") -> Optional[int]:
    """The channel axis of a layer output: 1 for (N, C, H, W...) and for 1-d conv/norm outputs
    (N, C, L); the last axis (features: a transformer's hidden size, its heads side by side) for
    other 2-d and 3-d outputs; None for scalars and vectors."""
    if len(shape) < 2:
        return None
    if len(shape) >= 4 or (len(shape) == 3 and "1d" in cls.lower()):
        return 1
    return -1


def compare(t: Any, o: Any, atol: Optional[float] = None, rtol: Optional[float] = None,
            channel_axis: Optional[int] = None) -> Stats:
    """Compare torch output ``t`` with ONNX output ``o`` (numpy arrays or torch tensors).

    Without ``atol``/``rtol`` (the engine) no tolerance-dependent count is made (``n_out`` is 0);
    with them ``n_out``/``fails()`` count the elements over ``atol + rtol * max|t|``.

    float32 arithmetic throughout.  The common case (same shape, all finite) takes few passes
    over the data: d = t - o, three BLAS dot products (d.d, t.t, t.d), |d| in place, its max
    and its sum (a dot with ones), and the min/max of t; o.o and t.o follow exactly from those
    (o.o = t.t - 2 t.d + d.d, t.o = t.t - t.d), which also makes the cosine of two identical
    tensors exactly 1.  numpy, single-threaded: torch's threaded reductions on many small
    tensors cost more in thread wake-ups than the arithmetic.  Non-finite values, and torch values at
    their dtype's largest magnitude, take the element-wise path.

    Two values saturated on the same side, each at its own dtype's largest finite magnitude or
    infinite (torch's float32 ``finfo.min`` attention mask against the float16 file's -65504 or
    -inf), are the same number to every consumer: they agree, and like two equal infinities they
    are left out of the sums and of the scale.  A finite torch value short of its dtype's extreme
    that the file holds as inf is not saturated on the torch side: an infinite error.
    """
    floor = rtol_floor(t, o)     # float16 / bfloat16: rtol_eff = max(rtol, K_EPS * eps), core/tolerance.py
    if rtol is not None:
        rtol = max(rtol, floor)
    with np.errstate(all="ignore"):     # overflow / inf - inf are measured, not warned about
        st = _compare(_f32(t), _f32(o), atol, rtol, channel_axis, (largest(t), largest(o)))
    st.rfloor = STEP if _integers(t) and _integers(o) else floor
    return st


# the floor an integer comparison stores (below every real floor: ``max(rtol, STEP)`` is rtol): a one-unit
# difference of integers is a whole step that no precision budget covers, so a call's float16 / int8 budget does
# not apply to it (decide/rules.py judges it at rtol)
STEP = -1.0


def _integers(a: Any) -> bool:
    dt = getattr(a, "dtype", None)
    if isinstance(dt, torch.dtype):
        return not dt.is_floating_point and not dt.is_complex and dt != torch.bool
    return dt is not None and np.issubdtype(dt, np.integer)


def largest(a: Any) -> float:
    """The largest finite magnitude of ``a``'s float dtype (float16: 65504); inf for other dtypes (no value of
    theirs is saturated short of infinity)."""
    dt = getattr(a, "dtype", None)
    if isinstance(dt, torch.dtype):
        return float(torch.finfo(dt).max) if dt.is_floating_point else math.inf
    if dt is not None and np.issubdtype(dt, np.floating):
        return float(np.finfo(dt).max)
    return math.inf


def _channel_max(d: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray:
    """max |d| per channel of the flat |d| of an output of ``shape`` (one pass over d)."""
    axis = axis % len(shape)
    pre = int(np.prod(shape[:axis], dtype=np.int64))
    post = int(np.prod(shape[axis + 1:], dtype=np.int64))
    view = d.reshape(pre, shape[axis], post)
    return _MAX(_MAX(view, axis=2), axis=0)


def _compare(tt: np.ndarray, oo: np.ndarray, atol: Optional[float], rtol: Optional[float],
             channel_axis: Optional[int] = None, largest: tuple[float, float] = (math.inf, math.inf)) -> Stats:
    if tt.shape != oo.shape:
        if tt.size == oo.size:
            oo = oo.reshape(tt.shape)
        else:
            n = max(tt.size, 1)
            return Stats(n=n, n_out=n, max_abs=math.inf, shape_mismatch=True)
    n = tt.size
    if n == 0:
        return Stats()
    shape = tt.shape
    tt = tt.ravel()
    oo = oo.ravel()
    d = tt - oo
    dd, t_t, t_d = float(np.dot(d, d)), float(np.dot(tt, tt)), float(np.dot(tt, d))
    np.abs(d, out=d)
    channels = None
    if channel_axis is not None and len(shape) >= 2 and shape[channel_axis] > 1:
        channels = _channel_max(d, shape, channel_axis)     # and max |d| from it: no extra pass
        max_abs = float(_MAX(channels))
    else:
        max_abs = float(_MAX(d))
    max_t = max(float(_MAX(tt)), -float(_MIN(tt)))
    if not (math.isfinite(max_abs) and math.isfinite(max_t) and math.isfinite(dd) and math.isfinite(t_t)
            and math.isfinite(t_d)) or max_t >= largest[0]:
        return _compare_np(tt, oo, atol, rtol, largest)
    n_out = _n_out(d, max_abs, max_t, atol, rtol)
    n_spread = int(np.count_nonzero(d >= 0.5 * max_abs)) if max_abs > 0 else 0
    sum_abs = float(np.dot(d, _ones(n))) if n <= _ONES_MAX else float(d.sum())
    return Stats(n=n, sum_abs=sum_abs, sum_sq=dd, max_abs=max_abs, max_t=max_t, dot=t_t - t_d,
                 norm_t=t_t, norm_o=max(t_t - 2.0 * t_d + dd, 0.0), n_out=n_out, n_spread=n_spread,
                 channels=channels, channel_axis=channel_axis if channel_axis is not None else 1)


def _n_out(d: np.ndarray, max_abs: float, max_t: float, atol: Optional[float], rtol: Optional[float]) -> int:
    if atol is None or rtol is None:
        return 0
    limit = bound(atol, rtol, max_t)
    return int(np.count_nonzero(~(d <= limit))) if not max_abs <= limit else 0     # NaN: never within


_MAX, _MIN = np.maximum.reduce, np.minimum.reduce     # NaN-propagating, like ndarray.max, less call overhead
_ONES: dict[int, np.ndarray] = {}
_ONES_MAX = 1 << 22      # larger tensors sum directly (the cache stays small)


def _ones(n: int) -> np.ndarray:
    """sum(|d|) as a BLAS dot with ones: one pass, faster than a float32 pairwise sum."""
    ones = _ONES.get(n)
    if ones is None:
        if len(_ONES) > 64:
            _ONES.clear()
        ones = _ONES[n] = np.ones(n, np.float32)
    return ones


def _f32(a: Any) -> np.ndarray:
    """A C-contiguous float32 array of ``a`` (no copy for contiguous float32 arrays and tensors)."""
    if type(a) is np.ndarray and a.dtype == np.float32 and a.flags.c_contiguous:
        return a
    if isinstance(a, torch.Tensor) and a.dtype == torch.float32 and not a.requires_grad and a.is_contiguous() \
            and a.device.type == "cpu":
        return a.numpy()
    if isinstance(a, torch.Tensor):
        a = a.detach()
        if a.dtype != torch.float32:
            a = a.to(torch.float32)
        a = a.cpu().numpy()
    return np.ascontiguousarray(a, dtype=np.float32)


def _compare_np(t: np.ndarray, o: np.ndarray, atol: Optional[float], rtol: Optional[float],
                largest: tuple[float, float] = (math.inf, math.inf)) -> Stats:
    """The element-wise path (1-D float32 arrays of equal size), used when values are not finite or
    torch's reach its dtype's largest magnitude (``largest``: torch's and the file's, ``compare``).

    An element where exactly one side is NaN/Inf (or both are, differently) is an infinite error:
    ``max_abs`` is inf and ``nan_mismatch`` counts such elements (the mean, RMSE and cosine are over
    the finite pairs; the spread counts the non-finite ones, the elements carrying the error).  A pair
    saturated on the same side (each at its own dtype's extreme or infinite) agrees, like equal
    infinities, and is left out of the figures."""
    n = t.size
    ft = np.isfinite(t)
    fo = np.isfinite(o)
    nan_mismatch = over = 0
    saturated = ((t >= largest[0]) & (o >= largest[1])) | ((t <= -largest[0]) & (o <= -largest[1]))
    if not (ft.all() and fo.all()) or saturated.any():
        # same non-finite value on both sides is agreement; exactly one side is a mismatch
        same = (t == o) | (np.isnan(t) & np.isnan(o)) | saturated
        nan_mismatch = int(np.count_nonzero((~ft | ~fo) & ~same))
        if nan_mismatch and largest[1] < largest[0]:       # the file's dtype is narrower: which are overflows
            over = int(np.count_nonzero(ft & np.isinf(o) & (np.abs(t) > largest[1]) & ((t > 0) == (o > 0))))
        keep = ft & fo & ~saturated
        t, o = t[keep], o[keep]
        if t.size == 0:
            return Stats(n=n, nan_mismatch=nan_mismatch, n_out=nan_mismatch if atol is not None else 0,
                         max_abs=math.inf if nan_mismatch else 0.0, n_spread=nan_mismatch, overflow=over,
                         overflow_limit=largest[1] if over else 0.0)
    d = np.abs(t - o)
    max_abs = float(d.max())
    max_t = float(np.abs(t).max())
    n_out = _n_out(d, max_abs, max_t, atol, rtol)
    return Stats(
        n=n,
        max_abs=math.inf if nan_mismatch else max_abs,      # a non-finite mismatch is an infinite error
        n_spread=int(np.count_nonzero(d >= 0.5 * max_abs)) if max_abs > 0 and not nan_mismatch else nan_mismatch,
        sum_abs=float(d.sum(dtype=np.float64)),
        sum_sq=float(np.dot(d, d)),
        max_t=max_t,
        **_dots(t, o, max_t),
        n_out=n_out + nan_mismatch if atol is not None else 0,
        nan_mismatch=nan_mismatch,
        overflow=over,
        overflow_limit=largest[1] if over else 0.0,
    )


def _dots(t: np.ndarray, o: np.ndarray, max_t: float) -> dict:
    """Dot products for the cosine; float64 when float32 squares would overflow (masks at -3e38)."""
    if max_t > 1e18 or float(np.abs(o).max()) > 1e18:
        t, o = t.astype(np.float64), o.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            return {"dot": float(np.dot(t, o)), "norm_t": float(np.dot(t, t)), "norm_o": float(np.dot(o, o))}
    return {"dot": float(np.dot(t, o)), "norm_t": float(np.dot(t, t)), "norm_o": float(np.dot(o, o))}
