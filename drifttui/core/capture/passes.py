"""The per-layer pass of one capture window over one sample: ORT run, hooked torch forward, local run.

ONNX Runtime runs first with the window's values as outputs; the torch forward's hooks then
compare each output with its ORT value *inside the hook* (before in-place ops) and keep nothing
but tolerance-free statistics.  The local run (each module's own nodes fed from torch) needs
clones of the cut values, taken in the same forward.  Which samples get this pass is decided
by the capture stage (``core/capture/stage.py``) without looking at any tolerance, so a tolerance
change never asks for a new capture.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from drifttui.core.base.progress import CancelToken
from drifttui.core.runtime import sessions
from drifttui.core.runtime.torch_hooks import Hooks, Sink, TensorStore, to_numpy
from drifttui.core.model.inputs import onnx_feeds
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.base.aggregate import Aggregate
from drifttui.core.base.dtypes import held_as
from drifttui.core.base.metrics import Stats, channel_axis_of, compare
from drifttui.core.capture.readers import readers_agree, saturated_only, with_file_values
from drifttui.core.prepare.windows import Window


class CompareSink(Sink):
    """Compares each hooked output of the window's calls with the ORT value at hook time."""

    def __init__(self, plan: Plan, ort_values: dict[str, np.ndarray], store: Optional[TensorStore],
                 calls: Optional[set[int]] = None, cancel: Optional[CancelToken] = None,
                 classes: Optional[list[str]] = None) -> None:
        self.plan = plan
        self.classes = classes or []      # module class per call: picks the channel axis (Conv1d: 1)
        self.ort = ort_values
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
            cls = self.classes[call] if call < len(self.classes) else ""
            for pos, value in cm.outputs.items():
                if pos < len(tensors) and value in self.ort:
                    total.add(self._compare(tensors[pos], value, cls))
            self.stats[call] = total
        if self.store is not None:
            self.store.on_output(call, tensors)

    def _compare(self, t: torch.Tensor, value: str, cls: str = "") -> Stats:
        axis = channel_axis_of(tuple(t.shape), cls)      # per-channel max |d|: where the error sits
        try:
            version = t._version
        except RuntimeError:      # an inference tensor has no version counter: never reuse
            return compare(t, self.ort[value], channel_axis=axis)
        seen = self._seen.get(value)
        if seen is not None and seen[0]() is t and seen[1] == version:
            return seen[2]
        st = compare(t, self.ort[value], channel_axis=axis)
        self._seen[value] = (weakref.ref(t), version, st)
        return st


@dataclass
class Accum:
    """What the per-layer passes add up to (tolerance-free scalars only)."""

    glob: dict[int, Aggregate] = field(default_factory=dict)
    loc_stats: dict[int, dict[int, Stats]] = field(default_factory=dict)   # owner -> sample -> own error
    # owner -> (first node index in execution order, that local value's own error) per sample and
    # value: the decide stage finds, at any tolerance, where the owner's local error starts
    loc_values: dict[int, list[tuple[int, Stats]]] = field(default_factory=dict)
    local_runs: int = 0

    def local_aggs(self) -> dict[int, Aggregate]:
        """Own errors per call, one entry per sample (windows that share an owner are merged)."""
        out: dict[int, Aggregate] = {}
        for owner, by_sample in self.loc_stats.items():
            agg = out[owner] = Aggregate()
            for i in sorted(by_sample):
                agg.add(i, by_sample[i])
        return out


@dataclass(frozen=True)
class Pass:
    """Everything one window's per-layer passes need."""

    plan: Plan
    window: Window
    main: Any                       # ORT session with the window's values as outputs
    fetch: list[str]
    local_sess: Any
    hooks: Optional[Hooks]
    model: Any
    forward: Callable[[Any, Any], list[torch.Tensor]]
    graph_inputs: list[str]
    input_dtypes: dict[str, str]
    classes: list[str] = field(default_factory=list)     # module class per call (channel axis)
    # kept values an in-place op changes after their hook (TensorStore.changed): cloned at hook time
    cloned: set[tuple[str, int, int]] = field(default_factory=set)


def run_sample(p: Pass, acc: Accum, i: int, sample: Any, feeds: Optional[dict], cancel: CancelToken,
               keep: bool = False, known: Optional[dict] = None) -> Optional[list]:
    """The per-layer pass of sample ``i``: global errors of every mapped call, then the local run.
    ``keep``: return torch's outputs (the output pass's determinism check compares them with its
    own forward instead of running a third).  ``known``: ``p.main``'s values on this sample,
    already fetched (the observer check's run of sample 0)."""
    if feeds is None:
        feeds = onnx_feeds(sample, p.graph_inputs, p.input_dtypes)
    ort_vals = known if known is not None and all(v in known for v in p.fetch) else sessions.run(p.main, feeds, p.fetch)
    del known
    use_local = p.local_sess is not None and p.hooks is not None and p.window.local is not None
    store = TensorStore(p.window.want_out, p.window.want_in, share=True, always=p.cloned) if use_local else None
    sink = CompareSink(p.plan, ort_vals, store, p.window.calls, cancel, p.classes)
    if p.hooks is not None:
        p.hooks.begin(sink)
    outs = p.forward(p.model, sample)
    if store is not None and store.changed():
        # values an in-place op changed after their hook: cloned from now on, and this sample's
        # kept values taken again (the comparisons above were made at hook time: they stand)
        p.cloned.update(store.changed())
        store = TensorStore(p.window.want_out, p.window.want_in, share=True, always=p.cloned)
        p.hooks.begin(store)          # type: ignore[union-attr]
        p.forward(p.model, sample)
    for ci, st in sink.stats.items():
        acc.glob.setdefault(ci, Aggregate()).add(i, st)
    if p.hooks is None and outs and p.plan.calls:
        total = Stats()
        for pos, v in p.plan.calls[0].outputs.items():
            if pos < len(outs):
                total.add(compare(outs[pos], ort_vals[v]))
        acc.glob.setdefault(0, Aggregate()).add(i, total)
    kept = outs if keep else None
    del ort_vals, sink, outs
    if store is not None:
        local_run(p, store, feeds, i, acc)
        acc.local_runs += 1
    if p.hooks is not None:
        p.hooks.begin(None)
    return kept


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
    vals = sessions.run(p.local_sess, lfeeds, list(local.outputs))
    excused = _excused(p, store, lfeeds, vals)
    per_call: dict[int, Stats] = {}
    for lname, v in local.outputs.items():
        owner = local.attribution.get(v)
        if owner is None:
            continue
        kind, ci, pos = table[v]
        t = (store.out if kind == "out" else store.inp).get((ci, pos))
        if t is None:
            continue
        if lname in excused:        # torch's "minus infinity" and the file's stand-in: its readers cannot tell
            t = with_file_values(t, vals[lname], excused[lname])
        # the root's own values per channel: a root origin's drill-down shows them, not the outputs
        got = held_as(vals[lname], local.narrow[v]) if v in local.narrow else vals[lname]    # float16 numbers
        st = compare(t, got, channel_axis=channel_axis_of(tuple(t.shape)) if owner == 0 else None)
        per_call.setdefault(owner, Stats()).add(st)
        acc.loc_values.setdefault(owner, []).append((local.first_node[v], st))
    for owner, st in per_call.items():
        acc.loc_stats.setdefault(owner, {}).setdefault(i, Stats()).add(st)


def _excused(p: Pass, store: TensorStore, lfeeds: dict, vals: dict) -> dict[str, np.ndarray]:
    """Local output -> the elements its readers cannot tell from torch's saturated values (capture/readers.py):
    those where torch saturates and the file holds another, finite, number, when running the local graph again with
    the file's values in the readers' feeds changes no mapped value.  Empty: none, or the readers can tell."""
    local = p.window.local
    assert local is not None
    feed_of = {v: name for name, v in local.feeds.items()}
    masks: dict[str, np.ndarray] = {}
    swaps: dict[str, np.ndarray] = {}
    for lname, v in local.outputs.items():
        if v not in feed_of or feed_of[v] not in lfeeds or local.attribution.get(v) is None:
            continue
        kind, ci, pos = p.plan.table[v]
        t = (store.out if kind == "out" else store.inp).get((ci, pos))
        mask = saturated_only(t, vals[lname]) if t is not None else None
        if mask is not None:
            masks[lname], swaps[feed_of[v]] = mask, vals[lname]
    if swaps and readers_agree(lambda feeds: sessions.run(p.local_sess, feeds, list(local.outputs)), lfeeds, vals,
                               swaps):
        return masks
    return {}
