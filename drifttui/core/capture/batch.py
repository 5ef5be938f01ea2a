"""Batched capture (``--batch N``): N samples concatenated along dim 0 in one ORT run and one forward.

Possible when every ONNX graph input has a symbolic dim 0 and every compared value splits
per sample: at batch N its dim 0 is N times its dim 0 at batch 1 (the trace), so it is cut
into N equal chunks along dim 0 (merged ``(b*h, ...)`` layouts split too when the batch is
the outer factor).  Every chunk is compared on its own, so the aggregates see one Stats per
sample with that sample's index, exactly as in a plain run.  ``prepare/batch_probe.py`` checks
the torch side before any sample is compared; ``probe_ort`` checks the ORT side with the first
window's session.  The local run stays per sample and unbatched (the local graph
is typed with batch-1 shapes): for every sample of the chunk the torch forward is repeated on
that sample alone with a clone-only sink.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.capture.passes import Accum, Pass, local_run
from drifttui.core.base.aggregate import Aggregate
from drifttui.core.base.metrics import Stats, compare
from drifttui.core.model.inputs import Sample, cat_samples, onnx_feeds
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.base.progress import CancelToken
from drifttui.core.runtime import sessions
from drifttui.core.runtime.torch_hooks import Sink, TensorStore


def probe_ort(session: Any, feeds2: dict[str, np.ndarray], fetch: list[str], table: dict,
              base: dict[tuple[int, int], tuple[int, ...]]) -> Optional[str]:
    try:
        vals = sessions.run(session, feeds2, fetch)
    except Exception as exc:
        return f"ONNX Runtime fails on two samples concatenated along dim 0 ({str(exc)[:200]})"
    for v, arr in vals.items():
        entry = table.get(v)
        if entry is None or entry[0] != "out" or (entry[1], entry[2]) not in base:
            continue
        if arr.size != 2 * math.prod(base[(entry[1], entry[2])]):
            return f"the ONNX value {v!r} does not split per sample along dim 0 at batch 2"
    return None


def _chunks(t: torch.Tensor, o: np.ndarray, k: int) -> Optional[list[tuple[torch.Tensor, np.ndarray]]]:
    if t.ndim == 0 or t.shape[0] % k:
        return None
    if o.shape != tuple(t.shape):
        if o.size != t.numel():
            return None
        o = o.reshape(tuple(t.shape))
    step = t.shape[0] // k
    return [(t[j * step:(j + 1) * step], o[j * step:(j + 1) * step]) for j in range(k)]


def compare_split(t: torch.Tensor, o: np.ndarray, k: int, atol: Optional[float] = None,
                  rtol: Optional[float] = None) -> list[Stats]:
    parts = _chunks(t, o, k)
    if parts is None:     # cannot tell the samples apart: every sample gets the whole comparison
        st = compare(t, o, atol, rtol)
        return [st] * k
    return [compare(tc, oc, atol, rtol) for tc, oc in parts]


class BatchCompareSink(Sink):
    """CompareSink for a batch of k samples: one Stats per sample and call, at hook time."""

    wants_inputs = False

    def __init__(self, plan: Plan, ort_values: dict[str, np.ndarray], k: int,
                 calls: Optional[set[int]], cancel: Optional[CancelToken]) -> None:
        self.plan, self.ort, self.k = plan, ort_values, k
        self.calls, self.cancel = calls, cancel
        self.stats: dict[int, list[Stats]] = {}

    def on_input(self, call: int, tensors: list[torch.Tensor]) -> None:
        if self.cancel is not None:
            self.cancel.check()

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        cm = self.plan.calls[call]
        if not cm.outputs or (self.calls is not None and call not in self.calls):
            return
        totals = [Stats() for _ in range(self.k)]
        for pos, value in cm.outputs.items():
            if pos < len(tensors) and value in self.ort:
                for tot, st in zip(totals, compare_split(tensors[pos], self.ort[value], self.k)):
                    tot.add(st)
        self.stats[call] = totals


def run_chunk(p: Pass, acc: Accum, ids: list[int], samples: list[Sample], cancel: CancelToken) -> None:
    """Samples ``ids`` in one ORT run and one hooked forward; per-sample results."""
    assert p.hooks is not None
    k = len(ids)
    batched = cat_samples(samples) if k > 1 else samples[0]
    feeds = onnx_feeds(batched, p.graph_inputs, p.input_dtypes)
    ort_vals = sessions.run(p.main, feeds, p.fetch)
    sink = BatchCompareSink(p.plan, ort_vals, k, p.window.calls, cancel)
    p.hooks.begin(sink)
    p.forward(p.model, batched)
    for ci, per in sink.stats.items():
        agg = acc.glob.setdefault(ci, Aggregate())
        for j, st in enumerate(per):
            agg.add(ids[j], st)
    del ort_vals, sink, feeds
    if p.local_sess is not None and p.window.local is not None:
        for j, i in enumerate(ids):
            store = TensorStore(p.window.want_out, p.window.want_in)
            p.hooks.begin(store)
            p.forward(p.model, samples[j])
            local_run(p, store, onnx_feeds(samples[j], p.graph_inputs, p.input_dtypes), i, acc)
            acc.local_runs += 1
    p.hooks.begin(None)
