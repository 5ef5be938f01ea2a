"""The live server's answers against torch and against the file's own local run.

Every sample goes to the server one request at a time (sequential), then all of them in flight at
once in waves (concurrent: the dynamic batcher joins them into batches up to ``max_batch_size``).
The torch outputs and the local ONNX Runtime run (the served settings) of the same samples are
computed first, so the request loops time the server and the comparison only
(``timings["served"]``, benchmarks/bench_triton.py)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.compose.served_setup import Setup
from drifttui.core.prepare.stage import Prepared
from drifttui.core.result import Config
from drifttui.core.result.served import ServedOutput, ServedRun
from drifttui.core.runtime import sessions
from drifttui.core.runtime.guards import safe_forward
from drifttui.core.runtime.torch_hooks import to_numpy
from drifttui.core.runtime.triton.client import Session
from drifttui.core.decide.served import over
from drifttui.errors import ModelError


@dataclass
class Reference:
    """Per sample: what the server is sent, and the torch and local outputs it is compared with."""

    names: list[str]
    wire: list[dict[str, np.ndarray]] = field(default_factory=list)
    torch: list[dict[str, np.ndarray]] = field(default_factory=list)
    local: list[dict[str, np.ndarray]] = field(default_factory=list)


def reference(pr: Prepared, cfg: Config, setup: Setup) -> Reference:
    b = setup.boundary
    assert b is not None
    names = [t.name for t in b.outputs] or list(pr.index.graph_outputs)
    position = {n: k for k, n in enumerate(pr.index.graph_outputs)}
    wire_of = {t.name: t for t in b.inputs}
    floor = sessions.make_session(pr.deployed, cfg.output_opt_level, cfg.deterministic, cfg.provider, pr.workdir,
                                  "served-local.onnx", data_dir=pr.index.data_dir, settings=cfg.session)
    ref = Reference(names)
    source = pr.source(cfg.seed, cfg.zero_input)
    for i in range(cfg.samples):
        sample = source.sample(i)
        feeds = pr.feeds(sample)
        ref.local.append(sessions.run(floor, feeds, names))
        t_outs = safe_forward(pr.model, sample, versioned=False, index=i)
        ref.torch.append({n: to_numpy(t_outs[position[n]]) for n in names if position.get(n, len(t_outs)) < len(t_outs)})
        wire = {}
        for name, arr in feeds.items():
            t = wire_of.get(name)
            if t is not None:
                arr = arr.astype(t.dtype, copy=False).reshape(b.wire_shape(t, arr.shape))
            wire[name] = arr
        ref.wire.append(wire)
    return ref


def _check_answer(name: str, got: np.ndarray, want: np.ndarray, declared: Optional[str], url: str) -> np.ndarray:
    if declared and str(got.dtype) != declared:
        raise ModelError(f"the Triton server at {url} answered output {name!r} as {got.dtype}, its config "
                         f"declares {declared}", "check the server's model: it does not return what its config says")
    if got.size != want.size:
        raise ModelError(f"the Triton server at {url} answered output {name!r} with shape {list(got.shape)}, the "
                         f"file gives {list(want.shape)} for the same sample",
                         "check that the server serves this file (dims/reshape in its config)")
    return got.reshape(want.shape)


def _devs(answers: list[dict[str, np.ndarray]], ref: Reference, setup: Setup, url: str) -> dict[str, list[float]]:
    declared = {t.name: t.dtype for t in setup.boundary.outputs} if setup.boundary else {}
    out: dict[str, list[float]] = {n: [] for n in ref.names}
    for i, ans in enumerate(answers):
        for n in ref.names:
            want = ref.local[i][n]
            got = _check_answer(n, ans[n], want, declared.get(n), url)
            d = np.abs(got.astype(np.float64) - want.astype(np.float64))
            out[n].append(float(np.nan_to_num(d, nan=np.inf).max()) if d.size else 0.0)
    return out


def send(session: Session, setup: Setup, ref: Reference, wave: int, progress: ProgressFn = no_progress,
         cancel: Optional[CancelToken] = None, url: str = "") -> tuple[list, list, float, float]:
    """(sequential answers, concurrent answers, seconds of each loop).  Progress counts the requests
    of both loops (about 50 reports in all: the front ends show the count and the time left), and a
    cancel stops between two requests (or two waves)."""
    n = len(ref.wire)
    every = max(1, n // 25)
    t = time.perf_counter()
    seq = []
    for i, w in enumerate(ref.wire):
        if cancel is not None:
            cancel.check()
        if i % every == 0:
            progress(Progress("served", i, 2 * n, f"requests to {url}, one at a time"))
        seq.append(session.infer(setup.model, setup.request_version, w, ref.names))
    t_seq = time.perf_counter() - t
    t = time.perf_counter()
    conc: list = []
    for start in range(0, n, wave):
        if cancel is not None:
            cancel.check()
        progress(Progress("served", n + start, 2 * n, f"requests to {url}, {wave} at once"))
        conc += session.infer_many(setup.model, setup.request_version, ref.wire[start:start + wave], ref.names)
    return seq, conc, t_seq, time.perf_counter() - t


def _top1(answers: list[dict[str, np.ndarray]], other: list[dict[str, np.ndarray]], name: str) -> Optional[float]:
    rows = agree = 0
    for a, o in zip(answers, other):
        x, y = a.get(name), o.get(name)
        if x is None or y is None or y.ndim != 2 or y.shape[-1] < 2 or x.size != y.size:
            return None
        agree += int((x.reshape(y.shape).argmax(-1) == y.argmax(-1)).sum())
        rows += y.shape[0]
    return agree / rows if rows else None


def compare(cfg: Config, setup: Setup, ref: Reference, seq: list, conc: list, times: tuple[float, float],
            url: str) -> tuple[list[ServedOutput], list[ServedRun], dict[str, bool]]:
    """Per output: served vs local and vs torch (worst sample), top-1; per loop: its worst |d|; and
    which loops are over the tolerance (at each output's own scale: ``core.decide.served.over``)."""
    d_seq, d_conc = _devs(seq, ref, setup, url), _devs(conc, ref, setup, url)
    outputs, fails = [], {"sequential": False, "concurrent": False}
    for n in ref.names:
        scale = max((float(np.abs(loc[n]).max()) for loc in ref.local if loc[n].size), default=0.0)
        f_seq, f_conc = over(d_seq[n], cfg.atol, cfg.rtol, scale), over(d_conc[n], cfg.atol, cfg.rtol, scale)
        fails["sequential"] |= f_seq
        fails["concurrent"] |= f_conc
        vs_torch = max((float(np.abs(a[n].reshape(t[n].shape).astype(np.float64) - t[n]).max())
                        for a, t in zip(seq, ref.torch) if n in t and a[n].size == t[n].size), default=0.0)
        outputs.append(ServedOutput(n, max(d_seq[n] + d_conc[n], default=0.0), vs_torch, scale,
                                    top1_vs_torch=_top1(seq, ref.torch, n),
                                    local_top1_vs_torch=_top1(ref.local, ref.torch, n),
                                    batched_top1_vs_torch=_top1(conc, ref.torch, n), fails=f_seq or f_conc))
    runs = [ServedRun("sequential", len(seq), max((max(v, default=0.0) for v in d_seq.values()), default=0.0),
                      round(times[0], 4)),
            ServedRun("concurrent", len(conc), max((max(v, default=0.0) for v in d_conc.values()), default=0.0),
                      round(times[1], 4))]
    return outputs, runs, fails


