"""Batched capture (``--batch N``): N samples concatenated along dim 0 in one ORT run and one forward.

Possible when every ONNX graph input has a symbolic dim 0 and every compared value splits
per sample: at batch N its dim 0 is N times its dim 0 at batch 1 (the trace), so it is cut
into N equal chunks along dim 0 (merged ``(b*h, ...)`` layouts split too when the batch is
the outer factor).  Every chunk is compared on its own, so the aggregates see one Stats per
sample with that sample's index, exactly as in a plain run.  ``probe_torch`` checks this on
a two-sample forward before any sample is compared; ``probe_ort`` checks the ORT side with
the first window's session.  The local run stays per sample and unbatched (the local graph
is typed with batch-1 shapes): for every sample of the chunk the torch forward is repeated on
that sample alone with a clone-only sink.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np
import torch

from drifttui.core.progress import CancelToken
from drifttui.core import capture_ort
from drifttui.core.capture_torch import Call, Sink, TensorStore
from drifttui.core.inputs import Sample, flatten, onnx_feeds
from drifttui.core.mapping import Plan
from drifttui.core.metrics import Aggregate, Stats, compare
from drifttui.core.passes import Accum, Pass, local_run
from drifttui.errors import first_line


def static_inputs(graph_inputs: list[tuple[str, list[Any], str]]) -> list[str]:
    """Names of the ONNX graph inputs whose dim 0 is not symbolic (batching needs none)."""
    return [name for name, dims, _ in graph_inputs if not dims or isinstance(dims[0], int)]


def cat_samples(samples: list[Sample]) -> Sample:
    """The samples concatenated along dim 0 of every input tensor."""
    first_args, first_kwargs = samples[0]
    args = tuple(torch.cat([s[0][k] for s in samples], 0) for k in range(len(first_args)))
    kwargs = {name: torch.cat([s[1][name] for s in samples], 0) for name in first_kwargs}
    return args, kwargs


def base_dims(plan: Plan, calls: list[Call]) -> dict[tuple[int, int], tuple[int, ...]]:
    """Batch-1 shape of every compared torch value, (call, position) -> shape, from the trace."""
    out: dict[tuple[int, int], tuple[int, ...]] = {}
    for ci, cm in enumerate(plan.calls):
        for pos in cm.outputs:
            if pos < len(calls[ci].outputs):
                out[(ci, pos)] = tuple(calls[ci].outputs[pos].shape)
    if calls:
        for pos, ref in enumerate(calls[0].outputs):
            out[(0, pos)] = tuple(ref.shape)
    return out


def splits(shape1: tuple[int, ...], shape_n: tuple[int, ...], n: int) -> bool:
    return len(shape1) >= 1 and len(shape1) == len(shape_n) and shape_n[0] == n * shape1[0] \
        and tuple(shape_n[1:]) == tuple(shape1[1:])


class _Shapes(Sink):
    wants_inputs = False

    def __init__(self) -> None:
        self.shapes: dict[tuple[int, int], tuple[int, ...]] = {}

    def on_input(self, call: int, tensors: list[torch.Tensor]) -> None:
        pass

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        for pos, t in enumerate(tensors):
            self.shapes[(call, pos)] = tuple(t.shape)


def _other_sample(sample: Sample) -> Sample:
    """A second, different sample of the same shapes (to see whether dim 0 mixes samples)."""
    def other(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point():
            return t.flip(-1) * 0.5 + 0.25 if t.ndim else t
        return t.flip(-1) if t.ndim else t
    args, kwargs = sample
    return tuple(other(a) for a in args), {k: other(v) for k, v in kwargs.items()}


def _mixes_samples(single: list[list[torch.Tensor]], both: list[torch.Tensor]) -> Optional[str]:
    """Why batching would change what the model computes (dim 0 is not a batch axis), or None."""
    for k, b in enumerate(both):
        parts = [s[k] for s in single if k < len(s)]
        if len(parts) != 2 or b.ndim == 0 or b.shape[0] != parts[0].shape[0] + parts[1].shape[0]:
            return f"output {k} does not split per sample along dim 0"
        halves = torch.split(b, [parts[0].shape[0], parts[1].shape[0]])
        for h, p in zip(halves, parts):
            if h.shape != p.shape:
                return f"output {k} does not split per sample along dim 0"
            if p.is_floating_point():
                scale = float(p.detach().abs().max()) if p.numel() else 0.0
                if float((h.detach() - p.detach()).abs().max()) > 1e-4 + 1e-3 * scale:
                    return (f"output {k} of a sample changes when another sample shares the batch: dim 0 "
                            "is not an independent batch axis (e.g. a softmax or mean over dim 0)")
            elif not torch.equal(h, p):
                return f"output {k} of a sample changes when another sample shares the batch"
    return None


def probe_torch(hooks: Any, model: Any, forward: Callable[[Any, Any], list[torch.Tensor]], sample0: Sample,
                base: dict[tuple[int, int], tuple[int, ...]]) -> Optional[str]:
    """None when a two-sample forward splits into per-sample values, else why not."""
    if any(t.ndim == 0 for t in flatten(sample0)):
        return "an input is a scalar (no dim 0 to batch along)"
    other = _other_sample(sample0)
    sink = _Shapes()
    hooks.begin(None)
    try:
        single = [forward(model, sample0), forward(model, other)]
        hooks.begin(sink)
        both = forward(model, cat_samples([sample0, other]))
    except Exception as exc:     # the model does not take two samples at once
        first = first_line(exc)
        return f"the PyTorch model fails on two samples concatenated along dim 0 ({first[:200]})"
    finally:
        hooks.begin(None)
    mixed = _mixes_samples(single, both)
    if mixed:
        return mixed
    for key, shape1 in base.items():
        got = sink.shapes.get(key)
        if got is None or not splits(shape1, got, 2):
            return (f"a compared value of shape {list(shape1)} at batch 1 is {list(got) if got else 'missing'} at "
                    "batch 2: it does not split per sample along dim 0")
    return None


def probe_ort(session: Any, feeds2: dict[str, np.ndarray], fetch: list[str], table: dict,
              base: dict[tuple[int, int], tuple[int, ...]]) -> Optional[str]:
    try:
        vals = capture_ort.run(session, feeds2, fetch)
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
    ort_vals = capture_ort.run(p.main, feeds, p.fetch)
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
