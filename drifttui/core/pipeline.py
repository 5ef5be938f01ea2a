"""The run as three typed stages, and the cache that reuses each while its inputs are unchanged.

    prepare(config)                   -> Prepared   model, export, graph index, trace, plan, windows
    capture(prepared, config)         -> Capture    tolerance-free per-sample statistics
    decide(prepared, capture, config) -> Result     statuses, origin, fails: the tolerance applied

:class:`Pipeline` keeps the last Prepared and a few Captures: a tolerance change runs ``decide``
only; a samples / seed / determinism / zero-input / ORT-level / layer-samples change captures
again on the same Prepared (``Result.timings["export"] == 0``); only a model, ONNX file, exporter,
inputs, example, provider, --batch or --max-memory change (or an edit of a file they name)
prepares again.  ``run_once`` is the uncached run the CLI uses.
"""
from __future__ import annotations

import math
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional

from drifttui.core.analysis import decide
from drifttui.core.capture import CAPTURE_FIELDS, Capture, capture, valid_layer_samples
from drifttui.core.prepare import PREPARE_FIELDS, Prepared, prepare
from drifttui.core.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import Config, Result
from drifttui.errors import InputError

_MAX_CAPTURES = 4      # per Prepared: toggling back and forth reuses both sides


@dataclass(frozen=True)
class Run:
    """One finished run: the stages it used and the Result decided from them."""

    prepared: Prepared
    capture: Capture
    result: Result


def validate(cfg: Config) -> None:
    if cfg.samples < 1:
        raise InputError(f"--samples {cfg.samples} is not a positive number", "use --samples 1 or more")
    if not (math.isfinite(cfg.atol) and math.isfinite(cfg.rtol)) or cfg.atol < 0 or cfg.rtol < 0:
        raise InputError("tolerances must be finite numbers >= 0", "use e.g. --atol 1e-4 --rtol 1e-4")
    if cfg.batch < 1:
        raise InputError(f"--batch {cfg.batch} is not a positive number", "use --batch 1 or more")
    from drifttui.core.capture_ort import OPT_LEVELS

    for flag, level in (("--opt-level", cfg.opt_level), ("--output-opt-level", cfg.output_opt_level)):
        if level not in OPT_LEVELS:
            raise InputError(f"unknown {flag} {level!r}", f"use one of {', '.join(OPT_LEVELS)}")
    if not valid_layer_samples(str(cfg.layer_samples)):
        raise InputError(f"--layer-samples {cfg.layer_samples!r} is not known", "use auto, all or a number >= 1")


def _file_stamp(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return (path, None)
    return (path, st.st_mtime_ns, st.st_size)


def fingerprint(cfg: Config) -> tuple:
    """Modification stamps of the files the config names, so an edited file prepares again."""
    paths = []
    for text in (cfg.model, cfg.inputs):
        if not text or text.startswith(("example:", "shape:")):
            continue
        # "file.py:fn" names a file, "pkg.mod:fn" does not (its stamp is then None)
        paths.append(text.rsplit(":", 1)[0] if ":" in text and not os.path.exists(text) else text)
    if cfg.onnx:
        paths += [cfg.onnx, cfg.onnx + ".data"]
    return tuple(_file_stamp(p) for p in paths)


def prepare_key(cfg: Config) -> tuple:
    return tuple(getattr(cfg, f) for f in PREPARE_FIELDS) + (fingerprint(cfg),)


def capture_key(cfg: Config) -> tuple:
    return tuple(getattr(cfg, f) for f in CAPTURE_FIELDS)


def _partial(pr: Prepared) -> Any:
    def make(cap: Capture) -> Result:
        return decide(pr, cap, cap.config)
    return make


def run_once(config: Config, progress: ProgressFn = no_progress, cancel: Optional[CancelToken] = None) -> Run:
    """prepare, capture, decide: no cache (the CLI, tests)."""
    validate(config)
    pr = prepare(config, progress, cancel)
    cap = capture(pr, config, progress, cancel, partial=_partial(pr))
    return _finish(pr, cap, config, progress, fresh_prepare=True, fresh_capture=True)


def _finish(pr: Prepared, cap: Capture, cfg: Config, progress: ProgressFn, fresh_prepare: bool,
            fresh_capture: bool) -> Run:
    t = time.perf_counter()
    timings = {k: (v if fresh_prepare else 0.0) for k, v in pr.timings.items()}
    timings.update({k: (v if fresh_capture else 0.0) for k, v in cap.timings.items()})
    timings["prepare_reused"] = 0.0 if fresh_prepare else 1.0
    timings["capture_reused"] = 0.0 if fresh_capture else 1.0
    timings["decide"] = 0.0
    result = decide(pr, cap, cfg, timings)
    timings["decide"] = time.perf_counter() - t
    timings["total"] = sum(v for k, v in timings.items() if k in ("load", "export", "map", "sessions",
                                                                  "samples", "decide"))
    result = result.with_(timings={k: round(v, 4) for k, v in timings.items()})
    progress(Progress("done", 1, 1, "done"))
    return Run(pr, cap, result)


class Pipeline:
    """The cached pipeline behind ``LocalEngine``: reruns reuse every stage whose inputs are unchanged."""

    def __init__(self) -> None:
        self._prepared: Optional[Prepared] = None
        self._pkey: Optional[tuple] = None
        self._captures: "OrderedDict[tuple, Capture]" = OrderedDict()
        self.last: Optional[Run] = None

    def run(self, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None) -> Run:
        validate(config)
        pkey = prepare_key(config)
        fresh_prepare = self._prepared is None or pkey != self._pkey
        if fresh_prepare:
            self._prepared, self._pkey = None, None      # free the old model before loading the new
            self._captures.clear()
            pr = prepare(config, progress, cancel)
            self._prepared, self._pkey = pr, pkey
        pr = self._prepared
        assert pr is not None
        ckey = capture_key(config)
        cap = self._captures.get(ckey)
        fresh_capture = cap is None
        if cap is None:
            cap = capture(pr, config, progress, cancel, partial=_partial(pr))
            self._captures[ckey] = cap
            while len(self._captures) > _MAX_CAPTURES:
                self._captures.popitem(last=False)
        else:
            self._captures.move_to_end(ckey)
        self.last = _finish(pr, cap, config, progress, fresh_prepare, fresh_capture)
        return self.last

    def forget(self) -> None:
        self._prepared, self._pkey, self.last = None, None, None
        self._captures.clear()
