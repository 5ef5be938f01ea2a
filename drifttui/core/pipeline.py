"""The run as four typed stages, and the engine's caches, which reuse each stage while its inputs are unchanged.

    prepare(config)                   -> Prepared   model, export, graph index, trace, plan, windows
    capture(prepared, config)         -> Capture    tolerance-free per-sample statistics
    decide(prepared, capture, config) -> Result     statuses, origin, fails: the tolerance applied
    explain(context, steps)           -> Explained  verified findings, the debugging steps

:class:`Pipeline` keeps the last Prepared, a few Captures made on it and the explain contexts of
its results: a tolerance change runs ``decide`` only; a samples / seed / determinism / zero-input /
ORT-level / layer-samples change captures again on the same Prepared (``Result.timings["export"]
== 0``); only a model, ONNX file, exporter, inputs, example, provider, --batch or --max-memory
change (or an edit of a file they name) prepares again.  The debugging steps' reruns capture
through the same cache.  Every front end drives a Pipeline (``run_once`` is one uncached run).
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

from drifttui.core.capture.drill import drill_pass
from drifttui.core.capture.stage import CAPTURE_FIELDS, Capture, capture
from drifttui.core.decide import level
from drifttui.core.decide.stage import decide
from drifttui.core.explain import Explained, explain
from drifttui.core.explain.causes.deliver.keep_list import search as keep_list_search, unkept_why
from drifttui.core.explain.causes.deliver.repair import Repaired, repair_patches
from drifttui.core.explain.causes.deliver.repro import Repro
from drifttui.core.explain.causes.deliver.restore import restoration, verified as restored_verified
from drifttui.core.explain.causes.deliver.source_fix import source_fixes
from drifttui.core.explain.context import Context
from drifttui.core.onnx.edit.keep.float32 import without_views
from drifttui.core.onnx.edit.keep.reduce_range import reduce_range
from drifttui.core.onnx.graph import full_model
from drifttui.core.onnx.weights import weights_in
from drifttui.core.capture.shares import torch_tensors
from drifttui.core.onnx.io import save_model
from drifttui.core.prepare.stage import PREPARE_FIELDS, Prepared, prepare
from drifttui.core.run_options import validate
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import OWN_VALUES, Channels, Config, Result, Step
from drifttui.errors import InputError

# per Prepared: toggling back and forth reuses both sides, and the steps' reruns (zero input,
# determinism on and off, the tolerance sweep's sample count) fit beside the user's own captures
_MAX_CAPTURES = 8
_MAX_CONTEXTS = 3      # explain contexts (one per result config) of the current Prepared


@dataclass(frozen=True)
class Run:
    """One finished run: the stages it used and the Result decided from them."""

    prepared: Prepared
    capture: Capture
    result: Result


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
    for onnx_file in (cfg.onnx, cfg.reference_onnx):
        if onnx_file:
            paths += [str(onnx_file), str(onnx_file) + ".data"]
    return tuple(_file_stamp(p) for p in paths)


def prepare_key(cfg: Config) -> tuple:
    return tuple(getattr(cfg, f) for f in PREPARE_FIELDS) + (fingerprint(cfg),)


def capture_key(cfg: Config) -> tuple:
    return tuple(getattr(cfg, f) for f in CAPTURE_FIELDS)


def _partial(pr: Prepared) -> Any:
    def make(cap: Capture) -> Result:
        return decide(pr, cap, cap.config, partial=True)     # the figures still in the background: none yet
    return make


def _prefixed(progress: ProgressFn, prefix: str) -> ProgressFn:
    """``progress`` for a nested run (a recheck's stages said as the copy's): the callable's own
    ``phase(prefix)`` when it has one (the CLI's printer), else ``prefix`` before each message."""
    phase = getattr(progress, "phase", None)
    if callable(phase):
        return phase(prefix)
    return lambda p: progress(dataclasses.replace(p, message=prefix + (p.message or p.stage)))


def _verified_patch(result: Result) -> bool:
    """A finding of ``result`` holds a verified graph rewrite (a lowering or a stability story, not a re-export
    that would put the origin back in float32 where no keep-list could)."""
    return any(f.verified and f.patch and f.patch.get("op") == "rewrite" for f in result.findings)


def run_once(config: Config, progress: ProgressFn = no_progress, cancel: Optional[CancelToken] = None) -> Run:
    """prepare, capture, decide on a fresh Pipeline (tests, one-off runs)."""
    return Pipeline().run(config, progress, cancel)


def _finish(pr: Prepared, cap: Capture, cfg: Config, progress: ProgressFn, fresh_prepare: bool,
            fresh_capture: bool) -> Run:
    t = time.perf_counter()
    timings = {k: (v if fresh_prepare else 0.0) for k, v in pr.timings.items()}
    timings.update({k: (v if fresh_capture else 0.0) for k, v in cap.timings.items()})
    timings["prepare_reused"] = 0.0 if fresh_prepare else 1.0
    timings["capture_reused"] = 0.0 if fresh_capture else 1.0
    # what the stages this result rests on really took, reused or not (the TUI's config line
    # and a saved report say "capture 11.1s, reused" instead of 0.0s)
    timings["prepare_time"] = sum(pr.timings.get(k, 0.0) for k in ("load", "export", "map"))
    timings["capture_time"] = sum(cap.timings.get(k, 0.0) for k in ("sessions", "observer", "samples"))
    timings["decide"] = 0.0
    result = decide(pr, cap, cfg, timings)
    timings["decide"] = time.perf_counter() - t
    # the initializers' figures, computed in the background while capture ran (not in the total)
    timings["details"] = pr.timings.get("details", 0.0) if fresh_prepare else 0.0
    timings["total"] = sum(v for k, v in timings.items() if k in ("load", "export", "map", "sessions", "observer",
                                                                  "samples", "decide"))
    result = result.with_(timings={k: round(v, 4) for k, v in timings.items()})
    progress(Progress("done", 1, 1, "done"))
    return Run(pr, cap, result)


class Pipeline:
    """The engine: runs the stages and owns every cache (no module-global state).

    ``run`` reuses every stage whose inputs are unchanged; ``explain`` and ``step`` work on the
    context of a result, built on the Prepared that made it (or prepared again from its config, for
    a result loaded from a report).  Not thread-safe: one call at a time.
    """

    def __init__(self) -> None:
        self._prepared: Optional[Prepared] = None
        self._pkey: Optional[tuple] = None
        self._captures: "OrderedDict[tuple, Capture]" = OrderedDict()
        self._contexts: "OrderedDict[Config, Context]" = OrderedDict()
        self.last: Optional[Run] = None

    # -- prepare, capture, decide -----------------------------------------------------------
    def _prepare(self, config: Config, progress: ProgressFn, cancel: Optional[CancelToken]) -> tuple[Prepared, bool]:
        pkey = prepare_key(config)
        if self._prepared is not None and pkey == self._pkey:
            return self._prepared, False
        self.forget()                       # free the old model before loading the new
        pr = prepare(config, progress, cancel)
        self._prepared, self._pkey = pr, pkey
        return pr, True

    def _capture(self, pr: Prepared, config: Config, progress: ProgressFn = no_progress,
                 cancel: Optional[CancelToken] = None) -> tuple[Capture, bool]:
        ckey = capture_key(config)
        cap = self._captures.get(ckey)
        if cap is not None:
            self._captures.move_to_end(ckey)
            return cap, False
        cap = capture(pr, config, progress, cancel, partial=_partial(pr))
        self._captures[ckey] = cap
        while len(self._captures) > _MAX_CAPTURES:
            self._captures.popitem(last=False)
        return cap, True

    def run(self, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None) -> Run:
        validate(config)
        pr, fresh_prepare = self._prepare(config, progress, cancel)
        cap, fresh_capture = self._capture(pr, config, progress, cancel)
        self.last = _finish(pr, cap, config, progress, fresh_prepare, fresh_capture)
        again = level.relocalised(self.last.result, config)
        if again is not None:       # the drift is ONNX Runtime's optimiser's: the layers at the deployed level
            progress(Progress("capture", 0, 1, f"comparing the layers again at ORT level {again.opt_level}"))
            cap2, fresh2 = self._capture(pr, again, progress, cancel)
            run2 = _finish(pr, cap2, again, progress, False, fresh2)
            if run2.result.drift_origin is not None:
                self.last = Run(pr, cap2, run2.result.with_(notes=[level.note(config)] + run2.result.notes))
        return self.last

    # -- explain --------------------------------------------------------------------------
    def context(self, result: Result, progress: ProgressFn = no_progress,
                cancel: Optional[CancelToken] = None) -> Context:
        """The explain context of ``result`` (kept while its Prepared is the current one)."""
        cfg = result.config
        if self._prepared is None or prepare_key(cfg) != self._pkey:
            progress(Progress("step", message="preparing the model again (export, trace, map)"))
            self._prepare(cfg, progress, cancel)
        pr = self._prepared
        assert pr is not None
        cancel = cancel or CancelToken()
        ctx = self._contexts.get(cfg)
        if ctx is None:
            ctx = Context(pr, result, lambda c, token: self._capture(pr, c, cancel=token)[0], progress, cancel,
                          recheck=lambda model, token: self.recheck(cfg, model, cancel=token))
            self._contexts[cfg] = ctx
            while len(self._contexts) > _MAX_CONTEXTS:
                self._contexts.popitem(last=False)
        else:
            if ctx.result is not result and ctx.result.drift_origin != result.drift_origin:
                ctx.cache.clear()          # origin-dependent analyses (sweep, findings) are stale
            ctx.result, ctx.progress, ctx.cancel = result, progress, cancel
            self._contexts.move_to_end(cfg)
        return ctx

    def explain(self, result: Result, steps: Iterable[int] = (), progress: ProgressFn = no_progress,
                cancel: Optional[CancelToken] = None) -> Explained:
        """The verified findings of ``result`` and the debugging ``steps`` asked for."""
        return explain(self.context(result, progress, cancel), steps)

    def step(self, number: int, result: Result, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None) -> Step:
        """One debugging step (the TUI's keys 1-6), through ``explain`` (without the findings: step 3
        verifies them itself)."""
        explained = explain(self.context(result, progress, cancel), [number], findings=False)
        return next(s for s in explained.result.steps if s.step == number)

    def compared_model(self, result: Result) -> Any:
        """The ONNX model ``result`` was measured on (drifttui's own export when no --onnx was
        given), while its Prepared is the current one; None otherwise."""
        if self._prepared is None or prepare_key(result.config) != self._pkey:
            return None
        return self._prepared.proto

    def repro(self, result: Result, progress: ProgressFn = no_progress,
              cancel: Optional[CancelToken] = None) -> Repro:
        """The drift origin's own nodes as an ONNX test case (``Repro.write`` writes it)."""
        explained = self.explain(result, progress=progress, cancel=cancel)
        exp = explained.explanation
        return Repro(explained.result, exp.case, exp.no_case, exp.loc.note if exp.loc else "")

    def repair(self, result: Result, progress: ProgressFn = no_progress,
               cancel: Optional[CancelToken] = None) -> Repaired:
        """A repaired copy of the file of ``result``, checked again end to end: a reduced-precision
        file over its budget through its precision gets its verified keep-in-float32 list; any other
        drift, its verified patches (graph edits, rewrites, grafted re-exports)."""
        cfg = result.config
        ctx = self.context(result, progress, cancel)
        checks = [0]

        def recheck(model: Any, label: str = "") -> Result:
            checks[0] += 1
            said = label or f"check {checks[0]} of a copy: "
            return self.recheck(cfg, model, progress=_prefixed(progress, said), cancel=cancel)

        keep = None
        if result.precision is not None and result.precision.verdict == "over budget":
            progress(Progress("repair", message=f"over the {result.precision.format} budget: looking for the "
                                                "smallest keep-in-float32 list (whole-model checks of copies)"))
            weights = torch_tensors(ctx.prepared.model, ctx.prepared.calls)
            keep = keep_list_search(ctx.prepared, result, recheck, weights)
            if not keep.genuine:
                if keep.verified and keep.model is not None:
                    return Repaired("keep_list", result, model=keep.model, after=keep.after, keep=keep)
                why = f"no keep-in-float32 list brings the file within its {result.precision.format} budget" + \
                    unkept_why(keep)
                reduced = self._reduce_range(ctx, result, recheck, keep, why, progress, cancel)
                if reduced.kind != "none" or not _verified_patch(reduced.result):
                    return reduced
                # not its precision: a verified patch of the origin (a lowering a keep-list cannot undo) repairs it
        explained = self.explain(result, progress=progress, cancel=cancel)
        if explained.result.drift_origin is None:
            return Repaired("nothing", explained.result, keep=keep)
        restored = self._restored(ctx, explained.result, recheck, progress, keep)
        if restored is not None:
            return restored
        fixed, why, fix = repair_patches(full_model(ctx.prepared.index), explained.result, explained.explanation)
        if fixed.model is None:
            return Repaired("none", explained.result, patches=fixed, keep=keep, reason=why, fix=fix)
        progress(Progress("repair", message=f"applying {len(fixed.applied)} patch(es) to a copy; checking it again"))
        env = explained.result.environment
        fixes = source_fixes(fixed.applied, explained.result.findings, env.opset, env.exporter)
        return Repaired("patches", explained.result, model=fixed.model, after=recheck(fixed.model, "repaired copy: "),
                        patches=fixed, keep=keep, source_fixes=fixes)

    def _restored(self, ctx: Context, result: Result, recheck: Any, progress: ProgressFn,
                  keep: Any) -> Optional[Repaired]:
        """The origin's weights and attributes put back from the model (their evidence is by content:
        no test case needed), verified by a check of the copy; None when there is no such evidence or
        the copy still drifts there."""
        fixed = restoration(ctx.prepared, result)
        if fixed is None:
            return None
        progress(Progress("repair", message=f"restoring {len(fixed.applied)} weight(s) / attribute(s) from the "
                                            "model on a copy; checking it again"))
        after = recheck(fixed.model, "restored copy: ")
        if not restored_verified(after, fixed.applied):
            return None
        return Repaired("patches", result, model=fixed.model, after=after, patches=fixed, keep=keep)

    def drill(self, layer: int, result: Result, progress: ProgressFn = no_progress,
              cancel: Optional[CancelToken] = None, every_sample: bool = False) -> Channels:
        """Layer ``layer``'s per-channel and per-sample errors: from the capture that made
        ``result`` when this Pipeline still holds it (no rerun), else one per-layer pass on the
        layer's worst sample.  ``every_sample``: over every sample of the run (the capture
        compared the layers on the layer samples only): from the capture when it covered them
        all, else one pass per sample for this layer alone."""
        cfg = result.config
        if not 0 <= layer < len(result.layers):
            raise InputError(f"layer #{layer} is not in this result", "pick a layer of the table")
        own = result.layers[layer].channels
        if own is not None and own.source == OWN_VALUES:      # the root's own values: the capture's local run
            if every_sample and len(own.samples) < result.samples:
                raise InputError(f"the root's own values were compared on {len(own.samples)} of the "
                                 f"{result.samples} samples (the layer samples)",
                                 "rerun with --layer-samples all to compare them on every sample")
            return own
        if self._prepared is not None and prepare_key(cfg) == self._pkey:
            cap = self._captures.get(capture_key(cfg))
            agg = cap.glob.get(layer) if cap is not None else None
            channels = agg.to_channels() if agg is not None else None
            if channels is not None and (not every_sample or len(channels.samples) >= result.samples):
                return channels
        metrics = result.layers[layer].metrics
        if metrics is None:
            raise InputError(f"layer #{layer} has no ONNX value of its own to compare "
                             f"({result.layers[layer].status})", "drill into a layer with metrics")
        pr, _ = self._prepare(cfg, progress, cancel)
        samples = range(result.samples) if every_sample else [metrics.max_abs.worst_sample]
        how = f"every sample ({result.samples})" if every_sample else f"sample #{metrics.max_abs.worst_sample}"
        progress(Progress("drill", 0, len(samples), f"per-layer passes of this layer on {how}"))
        agg = drill_pass(pr, cfg, layer, samples, cancel or CancelToken(), progress)
        channels = agg.to_channels(source="every-sample pass" if every_sample else "worst-sample pass") \
            if agg is not None else None
        if channels is None:
            raise InputError(f"layer #{layer}'s output has no channel axis (a scalar or a vector)",
                             "its metrics are the whole story")
        return channels

    def _reduce_range(self, ctx: Context, result: Result, recheck: Any, keep: Any, why: str,
                      progress: ProgressFn, cancel: Optional[CancelToken]) -> Repaired:
        """No keep-list works: when the CPU's int8 kernel saturates (explain/causes/propose/numerics/saturation_cause.py)
        and the reduce_range copy is verified within budget, that copy is the repair."""
        explained = self.explain(result, progress=progress, cancel=cancel)
        head = next((f for f in explained.explanation.findings if f.kind == "saturation"), None)
        if head is None or head.verified is not True:
            return Repaired("none", explained.result, keep=keep, reason=why,
                            fix=head.message if head is not None else "")
        pr = ctx.prepared
        model, _ = reduce_range(full_model(pr.index), pr.index, None, torch_tensors(pr.model, pr.calls))
        model = without_views(model)
        after = recheck(model)
        if after.verdict != "ok":
            return Repaired("none", explained.result, keep=keep, reason=why + "; the reduce_range copy is not "
                            "within budget on a second check")
        return Repaired("reduce_range", explained.result, model=model, after=after, keep=keep, fix=head.message)

    def recheck(self, config: Config, model: Any, progress: ProgressFn = no_progress,
                cancel: Optional[CancelToken] = None) -> Result:
        """``model`` (a repaired copy) compared again end to end, from a temporary file: the weights it still
        keeps in the checked file's external data are read in first (they are relative to that file's folder)."""
        data_dir = self._prepared.index.data_dir if self._prepared is not None else None
        with tempfile.TemporaryDirectory(prefix="drifttui-repair-") as d:
            path = save_model(weights_in(model, data_dir), Path(d) / "fixed.onnx")
            return Pipeline().run(dataclasses.replace(config, onnx=str(path)), progress, cancel).result

    def close(self) -> None:
        """Remove every temporary folder now (the Prepared's, the explain contexts'), not when the
        garbage collector finds them: a cancelled or failed call's traceback keeps them alive."""
        import shutil

        folders = [self._prepared.workdir] if self._prepared is not None else []
        folders += [c._dir for c in self._contexts.values() if getattr(c, "_dir", None) is not None]
        self.forget()
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)

    def forget(self) -> None:
        self._prepared, self._pkey, self.last = None, None, None
        self._captures.clear()
        self._contexts.clear()

