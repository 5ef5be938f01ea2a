"""Stage 2, ``capture(prepared, config) -> Capture``: tolerance-free statistics, streamed per sample.

Two kinds of pass, neither of which looks at a tolerance:

* the **output pass** (the floor) on every sample: one ONNX Runtime run of the plain graph at
  ``output_opt_level`` (default "all", ORT's own default: what a deployment runs; no extra
  outputs) and one plain torch forward (no hooks), comparing the model outputs.  That is what a
  user's own check costs.
* the **per-layer pass** on the *layer samples*, at ``opt_level`` (default "disable": fusions
  would hide the values compared): every mapped intermediate as an ORT output,
  the hooked forward comparing each module's output at hook time, and the local run (each
  module's own nodes fed from torch).  With ``layer_samples="auto"`` (the default) these are
  sample 0 (run at once, so that a first per-layer result shows after one sample) and the
  ``AUTO_LAYER_SAMPLES - 1`` other samples with the largest output error (max |d| / max |torch|
  over the outputs; ties: the earlier sample), run after the output pass has seen every sample,
  so the worst sample is always among them; ``"K"`` (a number) takes sample 0 and the K - 1
  worst; ``"all"`` runs every sample.  A fixed number of per-layer passes makes one more sample
  cost one output pass: the floor.

The choice of layer samples depends on the output errors only, never on atol/rtol, so the
decide stage can apply any tolerance to a Capture exactly.  Each per-layer Metrics says over
how many samples it is (``Metrics.samples``).
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from drifttui.core.capture import determinism, observer, rounding, shares
from drifttui.core.runtime import sessions
from drifttui.core.onnx.weights import give_back_freed, release_weights
from drifttui.core.runtime.torch_hooks import to_numpy
from drifttui.core.runtime.guards import check_finite_feeds, check_finite_outputs, safe_forward
from drifttui.core.base.aggregate import Aggregate
from drifttui.core.base.metrics import Stats, compare
from drifttui.core.capture.layer_samples import keep_worst, layer_sample_count, valid_layer_samples  # noqa: F401
from drifttui.core.capture.passes import Accum
from drifttui.core.capture.window_pass import WindowPass, per_layer
from drifttui.core.prepare.stage import Prepared
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import Config, ObserverCheck
from drifttui.core.prepare.windows import Window

# the Config fields a Capture depends on, on top of the Prepared's
CAPTURE_FIELDS = ("samples", "seed", "deterministic", "zero_input", "opt_level", "layer_samples",
                  "output_opt_level", "session")
@dataclass(frozen=True)
class Capture:
    """Per-sample statistics of one capture configuration (never written after it is built)."""

    config: Config
    samples: int                              # samples in the output pass
    layer_samples: tuple[int, ...]            # samples in the per-layer pass
    outputs: list[Aggregate]                  # per graph output, every sample
    top1: list[tuple[int, int]]               # (agreeing rows, rows) per graph output
    glob: dict[int, Aggregate]                # call -> its output's error per layer sample
    local: dict[int, Aggregate]               # call -> its own (local) error per layer sample
    local_values: dict[int, list[tuple[int, Stats]]]   # call -> (first node, error) per local value
    local_available: bool
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    windows: list[Window] = field(default_factory=list)      # the capture windows used
    observer: Optional[ObserverCheck] = None                 # sample 0: instrumented vs plain outputs
    output_dtypes: list[tuple[str, str]] = field(default_factory=list)   # per graph output: (torch, ORT)
    # two torch forwards of sample 0: (note, max |d|, max |torch|); ("", 0, 0) when bit-identical
    torch_self: tuple[str, float, float] = ("", 0.0, 0.0)
    # a reduced-precision file: call -> measured share of the output error (capture/shares.py)
    shares: dict[int, float] = field(default_factory=dict)
    output_level: str = ""    # the ORT level the output pass ran at ("": the configured one)
    # a reduced-precision file: call -> max |d| / max |torch| of the layer recomputed by PyTorch in the
    # file's precision on sample 0 (capture/rounding.py): what the conversion costs it
    rounding: dict[int, float] = field(default_factory=dict)


@dataclass
class _Outputs:
    """The output pass's running state."""

    aggs: list[Aggregate]
    top1: list[list[int]]
    times: list[float] = field(default_factory=list)
    dtypes: list[tuple[str, str]] = field(default_factory=list)     # sample 0's (torch, ORT) per output
    self_check: tuple[str, float, float] = ("", 0.0, 0.0)     # determinism.self_check on sample 0
    level: str = ""           # the ORT level the output pass ran at (lower than asked when ORT refused it)


# a partial result for the progress callback: (capture so far) -> Result
PartialFn = Callable[[Capture], Any]


def capture(prepared: Prepared, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None, partial: Optional[PartialFn] = None) -> Capture:
    cancel = cancel or CancelToken()
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    wanted = (config.deterministic, True) if config.deterministic else (False, before[1])
    # use_deterministic_algorithms imports torch._inductor (seconds): only call it to change something
    if wanted != before:
        torch.use_deterministic_algorithms(wanted[0], warn_only=wanted[1])
    try:
        return _capture(prepared, config, progress, cancel, partial)
    finally:
        if wanted != before:
            torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def _capture(pr: Prepared, cfg: Config, progress: ProgressFn, cancel: CancelToken,
             partial: Optional[PartialFn]) -> Capture:
    source = pr.source(cfg.seed, cfg.zero_input)
    n = 1 if source.fixed else cfg.samples
    k = layer_sample_count(cfg.layer_samples, n)
    timings: dict[str, float] = {"sessions": 0.0}
    notes = list(pr.notes)
    progress(Progress("observer", message="observer check: does marking values as outputs change ORT's numbers?"))
    t = time.perf_counter()
    windows, obs, prebuilt, values0 = observer.check(pr, cfg)
    timings["observer"] = time.perf_counter() - t
    run = _Run(pr, cfg, source, n, k, timings, notes, windows, obs, progress, partial, cancel)
    t_start, sessions_before = time.perf_counter(), timings["sessions"]
    first, rest = (windows[0], windows[1:]) if windows else (None, [])
    # sample 0's values from the observer check: read by its per-layer pass when that runs first
    # (--layer-samples all runs it after the output pass: not held that long)
    with WindowPass(pr, cfg, first, timings, prebuilt, None if run.every else values0) as wp:
        del values0
        run.samples(wp)
    for wi, w in enumerate(rest):        # further --max-memory / observer windows: the layer samples only
        with WindowPass(pr, cfg, w, timings) as wp:
            per_layer(wp, run.acc, source, run.chosen, run.batch, cancel)
        if partial is not None and wi < len(rest) - 1:      # layers fill in window by window
            progress(Progress("samples", n, n, f"window {wi + 2}/{len(windows)}", partial(run.snap(n))))
    timings["samples"] = time.perf_counter() - t_start - (timings["sessions"] - sessions_before)
    _finish(timings, notes, run.acc, run.outs, n, run.chosen)
    measured = _shares(pr, cfg, source, run.acc, notes, timings), rounding.measure(pr, source.sample(0), timings)
    return dataclasses.replace(run.snap(n), shares=measured[0], rounding=measured[1])     # after both: their timings


def _shares(pr: Prepared, cfg: Config, source: Any, acc: Accum, notes: list[str],
            timings: dict[str, float]) -> dict[int, float]:
    """A reduced-precision file: each layer's measured share of the output error on sample 0,
    the layers with the lowest own SQNR first (capture/shares.py)."""
    if pr.precision is None or not pr.precision.reduced or not pr.budgets or not pr.budgets[0]:
        return {}
    t = time.perf_counter()
    sample = source.sample(0)
    torch_outs = [to_numpy(o) for o in safe_forward(pr.model, sample, versioned=False)]
    own = acc.local_aggs()
    order = sorted(pr.budgets[0], key=lambda c: min(own[c].sqnr) if c in own and own[c].sqnr else math.inf)
    out = shares.measure(pr, cfg, pr.feeds(sample), torch_outs, order, notes)
    timings["shares"] = time.perf_counter() - t
    return out


class _Run:
    """The sample loop of window 0: the output pass on every sample, the per-layer pass on the
    layer samples.

    Memory: the weights are mapped once (``runtime.weights``) for the per-layer sessions, and the
    output pass's session packs its own copy.  Both are resident together only while the
    output-pass session is built: sample 0's per-layer pass runs before it exists, the mapping's
    pages are given back after each (``release_weights``), and the session is closed before the
    per-layer passes of the worst samples.  ``--layer-samples all`` keeps both (every sample runs
    both passes).
    """

    def __init__(self, pr: Prepared, cfg: Config, source: Any, n: int, k: int, timings: dict[str, float],
                 notes: list[str], windows: list[Window], obs: Any, progress: ProgressFn,
                 partial: Optional[PartialFn], cancel: CancelToken) -> None:
        self.pr, self.cfg, self.source, self.n, self.k = pr, cfg, source, n, k
        self.timings, self.notes, self.windows, self.obs = timings, notes, windows, obs
        self.progress, self.partial, self.cancel = progress, partial, cancel
        self.every = k >= n
        self.outs = _Outputs([Aggregate() for _ in pr.index.graph_outputs], [[0, 0] for _ in pr.index.graph_outputs])
        self.acc = Accum()
        self.chosen: list[int] = []
        self.worst: list[tuple[float, int]] = []   # heap of (output error, -sample) of the k - 1 worst after sample 0
        self.batch = min(pr.batch, n)
        self.floor: Any = None
        self.layer_time = 0.0
        self.layer_spent = 0.0             # seconds in per-layer passes so far
        self.loop_times: list[float] = []  # wall time of each sample after the first, its per-layer pass left out

    def snap(self, done: int) -> Capture:
        return _snapshot(self.pr, self.cfg, self.acc, self.outs, done, self.chosen, self.notes, self.timings,
                         self.windows, self.obs)

    def _open_floor(self) -> None:
        self.progress(Progress("sessions", message="opening the output pass's ONNX Runtime session"))
        t = time.perf_counter()
        pr, cfg = self.pr, self.cfg
        self.floor, self.outs.level, why = sessions.session_at_or_below(
            pr.deployed, cfg.output_opt_level, cfg.deterministic, cfg.provider, pr.workdir, "floor.onnx",
            data_dir=pr.index.data_dir, settings=cfg.session)
        if why and not any(n.startswith("the output pass ran at ORT level") for n in self.notes):
            self.notes.append(f"the output pass ran at ORT level {self.outs.level}, not {cfg.output_opt_level}: "
                              f"ONNX Runtime refuses this file at {cfg.output_opt_level} ({why.rsplit(' : ', 1)[-1][:160]}); it runs "
                              f"as given at {self.outs.level}, the level a deployment of it must set")
        release_weights(pr.index.data_dir)      # packing read every weight: the mapping's pages go back
        self.timings["sessions"] += time.perf_counter() - t

    def _layer_pass(self, wp: "WindowPass", chunk: list[tuple[int, Any]], keep: bool = False) -> Optional[list]:
        t = time.perf_counter()
        kept = wp.run(self.acc, chunk, self.cancel, keep)
        self.layer_spent += time.perf_counter() - t
        self.layer_time = max(self.layer_time, (time.perf_counter() - t) / max(1, len(chunk)))
        return kept

    def samples(self, wp: "WindowPass") -> None:
        n, cancel = self.n, self.cancel
        if self.batch > 1 and wp.p is not None:
            why = wp.probe_batch(self.source.sample(0))
            if why:
                self.notes.append(f"--batch {self.cfg.batch} was not applied (samples ran one at a time): {why}")
                self.batch = 1
        pending: list[tuple[int, Any]] = []
        first: Optional[list] = None           # torch's outputs of sample 0 in its per-layer pass
        for i in range(n):
            cancel.check()
            with sessions.on_sample(f"sample {i} of {n}"):
                pending, first = self._sample(wp, i, pending, first)
        self.floor = None        # its packed weights go before the worst samples' per-layer passes
        give_back_freed()
        extra = sorted(-j for _, j in self.worst)
        if extra:        # the worst samples, now that the output pass has seen every sample
            self.progress(Progress("samples", n, n, f"per-layer pass on the {len(extra)} worst sample(s)",
                                   eta=self.layer_time * len(extra)))
        per_layer(wp, self.acc, self.source, extra, self.batch, cancel)
        self.chosen = sorted(self.chosen + extra)

    def _sample(self, wp: "WindowPass", i: int, pending: list[tuple[int, Any]],
                first: Optional[list]) -> tuple[list[tuple[int, Any]], Optional[list]]:
        """Sample ``i``: its output pass, and its per-layer pass when it is a layer sample."""
        n, t0, spent0 = self.n, time.perf_counter(), self.layer_spent
        sample = self.source.sample(i)
        feeds = self.pr.feeds(sample)
        check_finite_feeds(feeds)
        if i == 0 and not self.every:        # before the output pass's session exists
            self.chosen.append(0)
            first = self._layer_pass(wp, [(0, sample)], keep=True)
            release_weights(self.pr.index.data_dir)
            give_back_freed()
        if self.floor is None:
            self._open_floor()
        if i == 0 and first is not None:     # torch's outputs of sample 0 are first's: checked against the trace's
            key = _output_pass(self.pr, self.floor, self.outs, i, sample, feeds,
                               self.pr.traced_outputs(self.cfg.seed, self.cfg.zero_input), known=first)
        else:
            key = _output_pass(self.pr, self.floor, self.outs, i, sample, feeds)
        first = None
        if self.every:
            self.chosen.append(i)
            pending.append((i, sample))
        elif i > 0:
            keep_worst(self.worst, key, i, self.k - 1)
        if pending and (len(pending) >= self.batch or i == n - 1):
            self._layer_pass(wp, pending)
            pending = []
        if i > 0:       # sample 0 is no measure of the rest: its torch outputs came from its per-layer pass
            self.loop_times.append(time.perf_counter() - t0 - (self.layer_spent - spent0))
        self._report(i)
        return pending, first

    def _report(self, i: int) -> None:
        """Progress after sample ``i``, with the time the rest should take (samples left at the
        median wall time of a sample, the per-layer passes still to run at the slowest seen so far);
        none after sample 0 (it said "about 1 s left" for a 6 s loop: only its ORT run was timed)."""
        n = self.n
        per = float(np.median(self.loop_times)) if self.loop_times else None
        layer_passes = (n - 1 - i) if self.every else min(self.k - 1, n - 1)
        eta = None if per is None else \
            (n - 1 - i) * per + (layer_passes + max(0, len(self.windows) - 1) * min(self.k, n)) * self.layer_time
        if i == 0 and self.partial is not None and n > 1:
            self.progress(Progress("samples", 1, n, f"sample 1/{n}", self.partial(self.snap(1)), eta=eta))
        elif i < n - 1:
            self.progress(Progress("samples", i + 1, n, f"sample {i + 1}/{n}", eta=eta))


def _finish(timings: dict[str, float], notes: list[str], acc: Accum, outs: _Outputs, n: int,
            chosen: list[int]) -> None:
    """Per-sample timings, and the note saying over how many samples the per-layer figures are."""
    timings["per_sample"] = timings["samples"] / n
    if outs.times:
        timings["per_sample_median"] = float(np.median(outs.times))
    timings["local_runs"] = float(acc.local_runs)
    if len(chosen) < n:
        which = f"sample 0 and the {len(chosen) - 1} with the largest output error" if len(chosen) > 1 else "sample 0"
        notes.append(f"the layers were compared on {len(chosen)} of the {n} samples ({which}; "
                     "--layer-samples all compares every sample layer by layer); the outputs' verdict covers "
                     f"all {n}")


def _snapshot(pr: Prepared, cfg: Config, acc: Accum, outs: _Outputs, n: int, chosen: list[int],
              notes: list[str], timings: dict[str, float], windows: list[Window],
              obs: Optional[ObserverCheck]) -> Capture:
    return Capture(config=cfg, samples=n, layer_samples=tuple(chosen), outputs=outs.aggs,
                   top1=[(a, b) for a, b in outs.top1], glob=acc.glob, local=acc.local_aggs(),
                   local_values=acc.loc_values, local_available=pr.local is not None, notes=list(notes),
                   timings=dict(timings), windows=list(windows), observer=obs, output_dtypes=list(outs.dtypes),
                   torch_self=outs.self_check, output_level=outs.level)


def _output_pass(pr: Prepared, sess: Any, outs: _Outputs, i: int, sample: Any, feeds: dict,
                 again: Optional[list] = None, known: Optional[list] = None) -> float:
    """The floor: plain ORT run + plain torch forward, outputs compared; returns the sample's key.
    ``known``: torch's outputs of this sample from a forward already run (sample 0's per-layer
    pass): no forward here.  ``again``: sample 0's outputs from another torch forward (the trace's),
    for the determinism check (else it runs one more forward)."""
    t0 = time.perf_counter()
    names = pr.index.graph_outputs
    ort_vals = sessions.run(sess, feeds, names)
    t_outs = known if known is not None else safe_forward(pr.model, sample, versioned=False, index=i)
    check_finite_outputs(t_outs, i)
    if i == 0:
        outs.self_check = determinism.self_check(pr.model, sample, t_outs, again)
    key = 0.0
    for k, name in enumerate(names):
        if k >= len(t_outs) or name not in ort_vals:
            continue
        tt, oo = t_outs[k], ort_vals[name]
        if i == 0:
            outs.dtypes.append((str(tt.dtype).replace("torch.", ""), str(oo.dtype)))
        st = compare(tt, oo)
        outs.aggs[k].add(i, st)
        key = max(key, math.inf if st.nan_mismatch or st.shape_mismatch else st.max_rel)
        if tt.ndim == 2 and tt.shape[-1] >= 2 and tuple(tt.shape) == oo.shape:
            outs.top1[k][0] += int((to_numpy(tt).argmax(-1) == oo.argmax(-1)).sum())
            outs.top1[k][1] += tt.shape[0]
    outs.times.append(time.perf_counter() - t0)
    return key
