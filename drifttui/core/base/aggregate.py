"""Per-layer aggregates of the per-sample comparisons (``metrics.Stats``): scalars only, none of them
tolerance-dependent, so that decide can re-apply any atol/rtol exactly afterwards; the summaries the Result
reports (``Metrics``) and the per-channel errors."""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from drifttui.core.result import HIST_EDGES, MAX_CHANNELS, Channels, Metrics, summary_of
from drifttui.core.base.metrics import _MAX, Stats
from drifttui.core.base.tolerance import bound


@dataclass
class Aggregate:
    """Streams per-sample Stats of one layer; keeps scalars only, none of them tolerance-dependent.

    ``fails(atol, rtol)`` re-decides from the kept (max |d|, max |t|, mismatch) triples, so a
    tolerance change needs no new capture.
    """

    max_abs: list[float] = field(default_factory=list)
    mean_abs: list[float] = field(default_factory=list)
    max_rel: list[float] = field(default_factory=list)
    rmse: list[float] = field(default_factory=list)
    cosine: list[float] = field(default_factory=list)
    spread: list[float] = field(default_factory=list)
    sqnr: list[float] = field(default_factory=list)     # 10 log10(sum t^2 / sum d^2) per sample (dB)
    # per sample: (max |d|, max |torch|) of each compared output, and whether NaN/Inf or the shape
    # mismatched: exactly what the tolerance rule needs
    bounds: list[tuple[tuple[float, float, float], ...]] = field(default_factory=list)
    mismatch: list[bool] = field(default_factory=list)
    sample_ids: list[int] = field(default_factory=list)
    nan_mismatch: int = 0
    overflow: int = 0                 # of nan_mismatch: overflows of the file's dtype (metrics.Stats.overflow)
    overflow_limit: float = 0.0
    nan_samples: list[int] = field(default_factory=list)     # samples with a NaN/Inf mismatch
    # max |d| per output channel over the samples added (elementwise max; None: not measured)
    channels: Optional[np.ndarray] = field(default=None, repr=False, compare=False)
    channel_axis: int = 1
    # to_metrics() is tolerance-free: kept until the next add(), so re-deciding reuses it
    _metrics: Optional[Metrics] = field(default=None, repr=False, compare=False)
    _flat: Optional[tuple] = field(default=None, repr=False, compare=False)

    def add(self, sample: int, s: Stats) -> None:
        self._metrics = self._flat = None
        self.sample_ids.append(sample)
        self.max_abs.append(s.max_abs)
        self.mean_abs.append(s.mean_abs)
        self.max_rel.append(s.max_rel)
        self.rmse.append(s.rmse)
        self.cosine.append(s.cosine)
        self.spread.append(s.spread)
        self.sqnr.append(s.sqnr_db)
        self.bounds.append(s.bounds())
        self.mismatch.append(s.nan_mismatch > 0 or s.shape_mismatch)
        self.nan_mismatch += s.nan_mismatch
        self.overflow += s.overflow
        self.overflow_limit = max(self.overflow_limit, s.overflow_limit)
        if s.nan_mismatch:
            self.nan_samples.append(sample)
        if s.channels is not None:
            if self.channels is None or self.channels.shape != s.channels.shape:
                self.channels, self.channel_axis = s.channels.copy(), s.channel_axis
            else:
                np.maximum(self.channels, s.channels, out=self.channels)   # NaN propagates: stays the worst

    def to_channels(self, source: str = "capture") -> Optional[Channels]:
        """The per-channel errors (pooled to MAX_CHANNELS entries) and the per-sample errors."""
        if self.channels is None:
            return None
        size = int(self.channels.size)
        group = -(-size // MAX_CHANNELS)
        values = self.channels
        if group > 1:
            pad = np.full(group * (-(-size // group)) - size, -np.inf, dtype=values.dtype)
            values = _MAX(np.concatenate([values, pad]).reshape(-1, group), axis=1)
        return Channels(axis=self.channel_axis, size=size, group=group,
                        max_abs=[float(v) for v in values], samples=list(self.sample_ids),
                        sample_max_abs=[float(v) for v in self.max_abs], source=source)

    @property
    def samples(self) -> int:
        return len(self.sample_ids)

    def failing(self, atol: float, rtol: float, floor: bool = True) -> list[int]:
        """Positions (not sample ids) of the samples that fail ``atol + rtol * scale``."""
        if self._flat is None:          # every (sample, max |d|, max |t|) as arrays, built once
            ks = [k for k, pairs in enumerate(self.bounds) for _ in pairs]
            self._flat = (np.asarray(ks, dtype=np.int64),
                          np.asarray([d for pairs in self.bounds for d, _, _ in pairs], dtype=np.float64),
                          np.asarray([t for pairs in self.bounds for _, t, _ in pairs], dtype=np.float64),
                          np.asarray([f for pairs in self.bounds for _, _, f in pairs], dtype=np.float64),
                          [k for k, bad in enumerate(self.mismatch) if bad])
        ks, ds, ts, fs, bad = self._flat
        with np.errstate(invalid="ignore"):
            over = ks[~(ds <= bound(atol, rtol, ts, fs if floor else 0.0))]   # a NaN |d| or scale is never within
        if not bad:
            return sorted(set(over.tolist()))
        return sorted(set(over.tolist()) | set(bad))

    def fails(self, atol: float, rtol: float, floor: bool = True) -> bool:
        return bool(self.failing(atol, rtol, floor))

    def most_over(self, atol: float, rtol: float, floor: bool = True) -> Optional[int]:
        """The sample id whose error is furthest over the tolerance (the largest max |d| / bound; a NaN/Inf or
        shape mismatch first), or None when no sample fails.  Not the sample of the largest max |d|: at a
        larger scale that one may be within the tolerance while another fails."""
        failing = self.failing(atol, rtol, floor)
        if not failing:
            return None

        def excess(k: int) -> float:
            if self.mismatch[k]:
                return float("inf")
            return max((d / b if b > 0 else float("inf")) if d == d else float("inf")
                       for d, b in ((d, float(bound(atol, rtol, t, f if floor else 0.0)))
                                    for d, t, f in self.bounds[k]))

        return self.sample_ids[max(failing, key=excess)]

    def to_metrics(self) -> Metrics:
        if self._metrics is None:
            self._metrics = self._make_metrics()
        return self._metrics

    def _make_metrics(self) -> Metrics:
        ids = self.sample_ids
        hist = [0] * (len(HIST_EDGES) + 1) if ids else []
        for v in self.max_abs:          # bins [-inf, e0), [e0, e1), ..., [e_last, inf]
            if v == v:
                hist[bisect.bisect_right(HIST_EDGES, math.log10(max(v, 1e-30)) if v != math.inf else math.inf)] += 1
        return Metrics(
            max_abs=summary_of(self.max_abs, ids),
            mean_abs=summary_of(self.mean_abs, ids),
            max_rel=summary_of(self.max_rel, ids),
            rmse=summary_of(self.rmse, ids),
            cosine=summary_of(self.cosine, ids, worst="min"),
            frac_out=summary_of(self.spread, ids),
            nan_mismatch=self.nan_mismatch,
            samples=len(ids),
            overflow=self.overflow,
            overflow_limit=self.overflow_limit,
            histogram=tuple(int(h) for h in hist),
        )
