"""One capture window over all samples: ORT run, torch forward compared at hook time, local run.

Per sample: ONNX Runtime runs first with the window's values as outputs; the torch forward's
hooks then compare each output with its ORT value *inside the hook* (before in-place ops) and
keep nothing.  The local run (each module's own nodes fed from torch) needs clones of the cut
values; it only matters for calls whose global error fails, so it runs for the first sample
(every layer then shows a local error) and for every sample in which a compared value fails.
For those later samples the torch forward is repeated with a clone-only sink; a clean sample
costs one ORT run and one hooked torch forward.
"""
from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from drifttui.core.progress import CancelToken
from drifttui.core import capture_ort
from drifttui.core.capture_torch import Hooks, Sink, TensorStore, to_numpy
from drifttui.core.inputs import onnx_feeds
from drifttui.core.mapping import Plan
from drifttui.core.metrics import Aggregate, Stats, compare
from drifttui.core.windows import Window


class CompareSink(Sink):
    """Compares each hooked output of the window's calls with the ORT value at hook time."""

    def __init__(self, plan: Plan, ort_values: dict[str, np.ndarray], atol: float, rtol: float,
                 store: Optional[TensorStore], calls: Optional[set[int]] = None,
                 cancel: Optional[CancelToken] = None) -> None:
        self.plan = plan
        self.ort = ort_values
        self.atol = atol
        self.rtol = rtol
        self.store = store
        self.calls = calls
        self.stats: dict[int, Stats] = {}
        self.cancel = cancel
        self.wants_inputs = store is not None
        # value -> (tensor, its version, stats): a container whose output is its last child's
        # output (same ONNX value, same tensor object, no in-place op since) reuses the child's
        # comparison.  The version counter (no_grad forward) sees every in-place change.
        self._seen: dict[str, tuple[weakref.ref, int, Stats]] = {}

    def on_input(self, call: int, tensors: list[torch.Tensor]) -> None:
        if self.cancel is not None:
            self.cancel.check()
        if self.store is not None:
            self.store.on_input(call, tensors)

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        cm = self.plan.calls[call]
        if cm.outputs and (self.calls is None or call in self.calls):
            total = Stats()
            for pos, value in cm.outputs.items():
                if pos < len(tensors) and value in self.ort:
                    total.add(self._compare(tensors[pos], value))
            self.stats[call] = total
        if self.store is not None:
            self.store.on_output(call, tensors)

    def _compare(self, t: torch.Tensor, value: str) -> Stats:
        try:
            version = t._version
        except RuntimeError:      # an inference tensor has no version counter: never reuse
            return compare(t, self.ort[value], self.atol, self.rtol)
        seen = self._seen.get(value)
        if seen is not None and seen[0]() is t and seen[1] == version:
            return seen[2]
        st = compare(t, self.ort[value], self.atol, self.rtol)
        self._seen[value] = (weakref.ref(t), version, st)
        return st


@dataclass
class Accum:
    """What the samples of every window add up to (scalars only)."""

    glob: dict[int, Aggregate] = field(default_factory=dict)
    loc_stats: dict[int, dict[int, Stats]] = field(default_factory=dict)   # owner -> sample -> own error
    local_first: dict[int, int] = field(default_factory=dict)
    out_aggs: list[Aggregate] = field(default_factory=list)
    top1: list[list[int]] = field(default_factory=list)
    sample_times: list[float] = field(default_factory=list)
    local_runs: int = 0

    def local_aggs(self) -> dict[int, Aggregate]:
        """Own errors per call, one entry per sample (windows that share an owner are merged)."""
        out: dict[int, Aggregate] = {}
        for owner, by_sample in self.loc_stats.items():
            agg = out[owner] = Aggregate()
            for i in sorted(by_sample):
                agg.add(i, by_sample[i])
        return out


@dataclass
class Pass:
    """Everything one window's sample loop needs."""

    plan: Plan
    window: Window
    main: Any                       # ORT session with the window's values as outputs
    fetch: list[str]
    local_sess: Any
    hooks: Optional[Hooks]
    model: Any
    forward: Callable[[Any, Any], list[torch.Tensor]]
    graph_outputs: list[str]
    graph_inputs: list[str]
    input_dtypes: dict[str, str]
    atol: float
    rtol: float
    outputs: bool                   # compare the model outputs in this window (the first one)


def run_sample(p: Pass, acc: Accum, i: int, sample: Any, feeds: Optional[dict], cancel: CancelToken,
               check_outputs: Callable[[list[torch.Tensor], int], None]) -> None:
    t0 = time.perf_counter()
    if feeds is None:
        feeds = onnx_feeds(sample, p.graph_inputs, p.input_dtypes)
    ort_vals = capture_ort.run(p.main, feeds, p.fetch)
    store = TensorStore(p.window.want_out, p.window.want_in) if p.local_sess is not None and i == 0 else None
    sink = CompareSink(p.plan, ort_vals, p.atol, p.rtol, store, p.window.calls, cancel)
    if p.hooks is not None:
        p.hooks.begin(sink)
    outs = p.forward(p.model, sample)
    check_outputs(outs, i)
    failed = False
    for ci, st in sink.stats.items():
        acc.glob.setdefault(ci, Aggregate()).add(i, st)
        failed |= st.fails()
    if p.hooks is None and outs and p.plan.calls:
        total = Stats()
        for pos, v in p.plan.calls[0].outputs.items():
            if pos < len(outs):
                total.add(compare(outs[pos], ort_vals[v], p.atol, p.rtol))
        acc.glob.setdefault(0, Aggregate()).add(i, total)
    if p.outputs:
        _compare_outputs(p, acc, i, outs, ort_vals)
    del ort_vals, sink, outs
    if p.local_sess is not None and p.hooks is not None and p.window.local is not None \
            and (store is not None or failed):
        if store is None:
            # a failing sample: repeat the forward, this time keeping the cut values
            store = TensorStore(p.window.want_out, p.window.want_in)
            p.hooks.begin(store)
            p.forward(p.model, sample)
        local_run(p, store, feeds, i, acc)
        acc.local_runs += 1
    if p.hooks is not None:
        p.hooks.begin(None)
    acc.sample_times.append(time.perf_counter() - t0)


def _compare_outputs(p: Pass, acc: Accum, i: int, outs: list[torch.Tensor], ort_vals: dict) -> None:
    for k, name in enumerate(p.graph_outputs):
        if k < len(outs) and name in ort_vals:
            tt, oo = outs[k], ort_vals[name]
            acc.out_aggs[k].add(i, compare(tt, oo, p.atol, p.rtol))
            if tt.ndim == 2 and tt.shape[-1] >= 2 and tuple(tt.shape) == oo.shape:
                acc.top1[k][0] += int((to_numpy(tt).argmax(-1) == oo.argmax(-1)).sum())
                acc.top1[k][1] += tt.shape[0]


def local_run(p: Pass, store: TensorStore, feeds: dict, i: int, acc: Accum) -> None:
    local = p.window.local
    assert local is not None
    table = p.plan.table
    lfeeds: dict[str, np.ndarray] = {}
    for name, v in local.feeds.items():
        kind, ci, pos = table[v]
        if kind == "graph_in":
            arr = feeds.get(v)
        else:
            t = (store.out if kind == "out" else store.inp).get((ci, pos))
            arr = to_numpy(t) if t is not None else None
        if arr is None:
            return
        want = local.feed_dtypes.get(name)      # float16 feeds were widened by to_numpy
        if want is not None and arr.dtype != want:
            arr = arr.astype(want)
        lfeeds[name] = arr
    vals = capture_ort.run(p.local_sess, lfeeds, list(local.outputs))
    per_call: dict[int, Stats] = {}
    for lname, v in local.outputs.items():
        owner = local.attribution.get(v)
        if owner is None:
            continue
        kind, ci, pos = table[v]
        t = (store.out if kind == "out" else store.inp).get((ci, pos))
        if t is None:
            continue
        st = compare(t, vals[lname], p.atol, p.rtol)
        per_call.setdefault(owner, Stats()).add(st)
        if st.fails():
            first = local.first_node[v]
            acc.local_first[owner] = min(acc.local_first.get(owner, first), first)
    for owner, st in per_call.items():
        acc.loc_stats.setdefault(owner, {}).setdefault(i, Stats()).add(st)
