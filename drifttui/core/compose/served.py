"""The served comparison (docs/triton.md): a Triton model repository's file run as Triton runs it,
and/or a live server's answers compared with torch and with the file's own local run.

    run(engine, config) -> Result      with Result.served (and Result.batch_sweep for --batch-sweep)

The file's drift (origin, cause) is the engine's ordinary run on the served file with the served
settings; the served verdict (``core/decide/served.py``, where pass/fail is decided) says whether the server computes what the file
computes, and if not, why.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Optional

from drifttui.core.compose import batch_sweep, served_live
from drifttui.core.compose.served_setup import Setup, from_repository, from_server
from drifttui.core.decide.served import OTHER_FILE, decide_served
from drifttui.core.pipeline import Pipeline
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import Config, Result
from drifttui.core.result.served import BatchSweep, Served
from drifttui.core.runtime.triton.client import Session
from drifttui.errors import InputError


def wanted(config: Config) -> bool:
    return bool(config.triton_repo or config.triton_url or config.batch_sweep)


def run(engine: Pipeline, config: Config, progress: ProgressFn = no_progress,
        cancel: Optional[CancelToken] = None) -> Result:
    _validate(config)
    session: Optional[Session] = None
    try:
        setup, session = _setup(config, progress)
        run_ = engine.run(setup.config if setup else config, progress, cancel)
        result, cfg = run_.result, run_.result.config
        cost: dict[str, float] = {}          # the served run's own time (timings, the TUI's status line)
        t0 = time.perf_counter()
        sweep = _sweep(run_, cfg, progress) if cfg.batch_sweep else None
        if sweep is not None:
            cost["batch_sweep"] = round(time.perf_counter() - t0, 4)
        served = None
        if setup is not None:
            served = _served(setup, cfg)
            if session is not None:
                served, sweep = _live(run_, cfg, setup, session, served, sweep, progress, cost, cancel)
        notes = list(result.notes) + (setup.notes if setup else [])
        return result.with_(served=served, batch_sweep=sweep, notes=notes, timings={**result.timings, **cost})
    finally:
        if session is not None:
            session.close()


def _validate(config: Config) -> None:
    if (config.triton_repo or config.triton_url) and not config.triton_model:
        raise InputError("--triton-repo / --triton-url need --model NAME (triton_model=)", "name the served model")
    if config.batch_sweep:
        batch_sweep.parse_sizes(",".join(str(k) for k in config.batch_sweep))


def _setup(config: Config, progress: ProgressFn) -> tuple[Optional[Setup], Optional[Session]]:
    if config.triton_url:
        progress(Progress("served", message=f"reading the served config from {config.triton_url}"))
        session = Session(config.triton_url)
        try:
            session.live()
            name = config.triton_model or ""
            served = session.config(name, config.triton_version)
            return from_server(config, served), session
        except BaseException:
            session.close()
            raise
    if config.triton_repo:
        return from_repository(config), None
    return None, None


def _served(setup: Setup, cfg: Config) -> Served:
    sc = setup.served_config
    return Served(setup.source, setup.model, setup.version, cfg.triton_repo or "", cfg.triton_url or "", setup.file,
                  setup.why_file, list(setup.fields), list(setup.unreproducible),
                  int(sc.max_batch_size) if sc is not None else 0,
                  bool(sc is not None and sc.HasField("dynamic_batching")))


def _sweep(run_: Any, cfg: Config, progress: ProgressFn, sizes: Optional[tuple[int, ...]] = None) -> BatchSweep:
    sizes = sizes or cfg.batch_sweep
    progress(Progress("sweep", message=f"batch sweep: the samples alone and batched at {list(sizes)}"))
    return batch_sweep.sweep(run_.prepared, cfg, sizes)


def _live(run_: Any, cfg: Config, setup: Setup, session: Session, served: Served, sweep: Optional[BatchSweep],
          progress: ProgressFn, cost: dict[str, float],
          cancel: Optional[CancelToken] = None) -> tuple[Served, Optional[BatchSweep]]:
    progress(Progress("served", message=f"torch and the local run on {cfg.samples} samples for the server"))
    t0 = time.perf_counter()
    ref = served_live.reference(run_.prepared, cfg, setup)
    t_ref = time.perf_counter() - t0
    wave = max(8, 2 * served.max_batch_size)
    progress(Progress("served", message=f"sending {cfg.samples} samples to {cfg.triton_url}: one at a time, "
                                        f"then {wave} at once"))
    seq, conc, t_seq, t_conc = served_live.send(session, setup, ref, wave, progress, cancel, cfg.triton_url or "")
    outputs, runs, fails = served_live.compare(cfg, setup, ref, seq, conc, (t_seq, t_conc), cfg.triton_url or "")
    if fails["concurrent"] and not fails["sequential"] and sweep is None and served.max_batch_size > 1:
        t0 = time.perf_counter()
        sweep = _sweep(run_, cfg, progress, (1, min(served.max_batch_size, max(2, cfg.samples))))
        cost["batch_sweep"] = round(time.perf_counter() - t0, 4)
    verdict, reason, detail = decide_served(fails, runs, setup.casts, setup.unreproducible, sweep)
    if reason == OTHER_FILE:
        detail += _versions(session, setup)
    served = dataclasses.replace(served, outputs=outputs, runs=runs, verdict=verdict, reason=reason, detail=detail)
    cost.update(served_reference=round(t_ref, 2), served_requests=round(t_seq + t_conc, 2))
    progress(Progress("served", message=f"served comparison took {t_ref:.1f} s (references) + "
                                        f"{t_seq + t_conc:.1f} s (requests)"))
    return served, sweep


def _versions(session: Session, setup: Setup) -> str:
    """The versions the server serves, beside the compared file's (from its metadata)."""
    try:
        served = session.metadata(setup.model, setup.request_version).get("versions", [])
    except Exception:      # the metadata is a detail of the verdict: its failure changes nothing
        return ""
    mine = f"; the compared file is version {setup.version} of the repository" if setup.version is not None else ""
    return f"; the server serves version(s) {', '.join(map(str, served)) or '?'}{mine}"
