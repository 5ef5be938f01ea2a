"""Orchestration of one run: load, export, trace, map, stream samples, decide.

No threads of its own: callers (CLI, TUI worker) pass a progress callback and a cancel
token, checked between samples and between layers.  The per-sample work (ORT run, hooked
torch forward, local run when needed) is in ``passes``; the split into capture windows
under ``--max-memory`` is in ``windows``.
"""
from __future__ import annotations

import contextlib
import gc
import math
import platform
import shutil
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core import capture_batch, capture_ort, observer
from drifttui.core.arity import check_output_count
from drifttui.core.analysis import coverage, decide, make_layers, make_origin
from drifttui.core.capture_torch import Call, Hooks, TensorRef, hookable, run_model
from drifttui.core.details import layer_details
from drifttui.core.export import dynamic_batch, export_auto, export_model
from drifttui.core.graph import DYNAMO, TORCHSCRIPT, GraphIndex, build_index, elem_type_name
from drifttui.core.inputs import InputSource, build_source, flatten, onnx_feeds
from drifttui.core.loading import load_onnx, load_torch_model, new_workdir
from drifttui.core.local import build_local_graph
from drifttui.core.mapping import Plan, build_plan
from drifttui.core.metrics import Aggregate
from drifttui.core.passes import Accum, Pass, run_sample
from drifttui.core.result import (SCHEMA_VERSION, UNATTRIBUTED, Config, Environment, ObserverCheck, Output, Result,
                                  Tolerance)
from drifttui.core.tolerance import DTYPE_RULE
from drifttui.core.spec import parse_input_spec, parse_model_spec
from drifttui.core.windows import Window, attach_local, human, plan_windows
from drifttui.errors import InputError, ModelError, first_line


class Session:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.workdir: Optional[Path] = None
        # kept after run() for the debugging steps
        self.model: Any = None
        self.index: Optional[GraphIndex] = None
        self.calls: list[Call] = []
        self.plan: Optional[Plan] = None
        self.source: Optional[InputSource] = None
        self.windows: list[Window] = []
        self._details: Any = None
        self._batch = 1                     # --batch in effect (1 after a fallback)
        self._batch_notes: list[str] = []
        self._export_note = ""              # --exporter auto: why the first exporter failed
        self._observer: Optional[ObserverCheck] = None
        self._timings: dict[str, float] = {}

    # ------------------------------------------------------------------------------
    def run(self, progress: ProgressFn = no_progress, cancel: Optional[CancelToken] = None) -> Result:
        cancel = cancel or CancelToken()
        self.workdir = new_workdir()
        try:
            return self._run(progress, cancel)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _run(self, progress: ProgressFn, cancel: CancelToken) -> Result:
        cfg = self.config
        timings: dict[str, float] = {}
        self._timings, self._observer = timings, None
        t0 = time.perf_counter()
        self._details = None
        if cfg.samples < 1:
            raise InputError(f"--samples {cfg.samples} is not a positive number", "use --samples 1 or more")
        if not (math.isfinite(cfg.atol) and math.isfinite(cfg.rtol)) or cfg.atol < 0 or cfg.rtol < 0:
            raise InputError("tolerances must be finite numbers >= 0", "use e.g. --atol 1e-4 --rtol 1e-4")
        if cfg.batch < 1:
            raise InputError(f"--batch {cfg.batch} is not a positive number", "use --batch 1 or more")
        self._batch, self._batch_notes, self._export_note = cfg.batch, [], ""
        progress(Progress("load", message="loading the model"))
        spec = parse_model_spec(cfg.model)
        example = None
        if spec.kind == "example":
            from drifttui.examples import get_example

            example = get_example(spec.example or "")
        model = load_torch_model(spec, trust=cfg.trust_model_file)
        self.model = model
        in_spec = parse_input_spec(cfg.inputs)

        proto = None
        exporter = "user file"
        if cfg.onnx:
            proto = load_onnx(Path(cfg.onnx))
            gi = _graph_inputs(proto)
            static = capture_batch.static_inputs(gi) if cfg.batch > 1 else []
            if static:
                self._no_batch(f"the ONNX file's input(s) {', '.join(static[:5])} have a static dim 0")
        else:
            gi = None
        source = build_source(in_spec, cfg.seed, cfg.zero_input, gi, example)
        self.source = source
        sample0 = source.sample(0)
        timings["load"] = time.perf_counter() - t0

        if proto is None:
            progress(Progress("export", message=f"exporting with the {cfg.exporter} exporter"))
            t = time.perf_counter()
            try:
                path, exporter, self._export_note = export_auto(
                    lambda name: self._export(model, example, sample0, name, self._batch > 1), cfg.exporter)
            except ModelError as exc:
                if self._batch == 1:
                    raise
                self._no_batch(f"the export with a dynamic batch dim failed ({exc.problem})")
                path, exporter, self._export_note = export_auto(
                    lambda name: self._export(model, example, sample0, name, False), cfg.exporter)
            proto = load_onnx(path)
            timings["export"] = time.perf_counter() - t
        cancel.check()

        t = time.perf_counter()
        index = build_index(proto)
        self.index = index
        if exporter == "user file":
            exporter = {DYNAMO: "dynamo (from the file's metadata)",
                        TORCHSCRIPT: "torchscript (from the file's node names)"}.get(index.flavour, "unknown")
        input_dtypes = {name: dt for name, _, dt in _graph_inputs(proto)}
        feeds0 = onnx_feeds(sample0, index.graph_inputs, input_dtypes)

        ok_hooks, why_not = hookable(model)
        hooks = Hooks(model) if ok_hooks else None
        deterministic_before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(cfg.deterministic, warn_only=True)
        try:
            return self._stream(cfg, progress, cancel, model, example, index, proto, feeds0, sample0,
                                source, input_dtypes, hooks, why_not, exporter, timings, t0, t)
        finally:
            torch.use_deterministic_algorithms(deterministic_before)

    def _export(self, model: Any, example: Any, sample0: Any, exporter: str, dynamic: bool) -> Path:
        assert self.workdir is not None
        with dynamic_batch(dynamic):
            if example is not None and example.needs_custom_export():
                return example.export(model, sample0, exporter, self.workdir)
            return export_model(model, sample0[0], sample0[1], exporter, self.workdir)

    def _no_batch(self, why: str) -> None:
        if self._batch > 1:
            self._batch_notes.append(f"--batch {self.config.batch} was not applied (samples ran one at a time): "
                                     f"{why}")
        self._batch = 1

    def _stream(self, cfg: Config, progress: ProgressFn, cancel: CancelToken, model: Any, example: Any,
                index: GraphIndex, proto: Any, feeds0: dict, sample0: Any, source: InputSource,
                input_dtypes: dict, hooks: Optional[Hooks], why_not: str, exporter: str,
                timings: dict[str, float], t0: float, t_map: float) -> Result:
        assert self.workdir is not None
        progress(Progress("map", message="tracing module calls and mapping them to ONNX values"))
        if hooks is not None:
            with hooks.installed():
                hooks.begin(None, tracing=True)
                outs = _safe_forward(model, sample0)
            calls = hooks.calls
            names = [n for n, _ in model.named_modules()]
            has_params = {n: any(True for _ in m.parameters(recurse=False)) or
                          any(True for _ in m.buffers(recurse=False)) for n, m in model.named_modules()}
            first_name = {id(m): n for n, m in reversed(list(model.named_modules(remove_duplicate=False)))}
            aliases = {n: first_name[id(m)] for n, m in model.named_modules(remove_duplicate=False)
                       if first_name[id(m)] != n}
            multi_out = {ci: [t.numpy() for t in ts] for ci, ts in hooks.multi_out.items()}
            hooks.multi_out = {}
        else:
            outs = _safe_forward(model, sample0)
            calls = [Call(0, "", type(model).__name__, 0, 0, None,
                          outputs=[TensorRef.of(o) for o in outs])]
            names, has_params = [""], {"": False}
            aliases, multi_out = {}, {}
        check_output_count(len(outs), index.graph_outputs)
        self.calls = calls

        def resolve(values: list[str]) -> dict[str, np.ndarray]:
            # sample 0 through ONNX Runtime (optimisations off) for content-based output pairing
            sess = capture_ort.make_session(proto, "disable", False, cfg.provider, self.workdir, "pairing.onnx",
                                            extra_outputs=values)
            return capture_ort.run(sess, feeds0, values)

        plan = build_plan(index, calls, names, has_params, aliases, resolve, multi_out)
        if hooks is None:
            plan.localized = False
            plan.reason = why_not
        self.plan = plan
        n = 1 if source.fixed else cfg.samples
        base = capture_batch.base_dims(plan, calls)
        if self._batch > 1 and n > 1:
            if hooks is None:
                self._no_batch("batched capture needs module hooks")
            else:
                with hooks.installed():
                    why = capture_batch.probe_torch(hooks, model, _safe_forward, sample0, base)
                if why:
                    self._no_batch(why)
        batch = min(self._batch, n)
        model_input_refs = [TensorRef.of(t) for t in flatten(sample0)]
        local = build_local_graph(index, plan, calls, model_input_refs) if hooks is not None else None
        budget = cfg.max_memory if hooks is not None else None
        windows, total_bytes = plan_windows(plan, calls, index, max(1, budget // batch) if budget else budget,
                                            set(index.graph_inputs))
        attach_local(windows, local, plan)
        mem_windows = len(windows)
        windows, prebuilt = self._observer_check(cfg, proto, feeds0, index, plan, windows, local)
        self.windows = windows
        timings["map"] = time.perf_counter() - t_map

        acc = Accum(out_aggs=[Aggregate() for _ in index.graph_outputs], top1=[[0, 0] for _ in index.graph_outputs])
        extra: list[str] = []
        if mem_windows > 1:
            extra.append(f"captured in {mem_windows} windows of consecutive layers to stay within --max-memory "
                         f"{human(budget or 0)} (one sample's intermediates, both sides: ~{human(total_bytes)}); "
                         "each window costs one ORT run and one torch forward per sample")
        if cfg.max_memory is not None and hooks is None:
            extra.append("--max-memory was not applied: windowed capture needs module hooks")
        big = [w for w in windows if budget is not None and w.nbytes > budget]
        if big:
            listed = ", ".join(str(w.first) for w in big[:10]) + (f" and {len(big) - 10} more" if len(big) > 10 else "")
            extra.append(f"layer(s) {listed} alone exceed --max-memory; they were captured on their own")
        done, total = 0, n * len(windows)
        if self._export_note:
            extra.append(self._export_note)
        notes_at = len(extra)
        extra.extend(self._batch_notes)
        t_samples = time.perf_counter()
        gc.collect()
        gc.freeze()     # the model, graph and sessions are long-lived: keep them out of every GC pass
        with hooks.installed() if hooks is not None else contextlib.nullcontext(), _unfreeze():
            for wi, w in enumerate(windows):
                t_sess = time.perf_counter()
                main = prebuilt if wi == 0 and prebuilt is not None else capture_ort.make_session(
                    proto, cfg.opt_level, cfg.deterministic, cfg.provider, self.workdir, "main.onnx",
                    extra_outputs=w.values)
                prebuilt = None
                local_sess = None
                if w.local is not None:
                    local_sess = capture_ort.make_session(w.local.model, cfg.opt_level, cfg.deterministic,
                                                          cfg.provider, self.workdir, "local.onnx")
                timings["sessions"] = timings.get("sessions", 0.0) + time.perf_counter() - t_sess
                fetch = list(dict.fromkeys(index.graph_outputs + w.values))
                p = Pass(plan, w, main, fetch, local_sess, hooks, model, _safe_forward, index.graph_outputs,
                         index.graph_inputs, input_dtypes, cfg.atol, cfg.rtol, outputs=wi == 0)
                if batch > 1 and wi == 0:
                    feeds2 = onnx_feeds(capture_batch.cat_samples([sample0, sample0]), index.graph_inputs,
                                        input_dtypes)
                    why = capture_batch.probe_ort(main, feeds2, fetch, plan.table, base)
                    if why:
                        self._no_batch(why)
                        batch = 1
                        extra[notes_at:] = self._batch_notes
                for start in range(0, n, batch):
                    cancel.check()
                    ids = list(range(start, min(start + batch, n)))
                    if batch == 1:
                        i = start
                        sample = sample0 if i == 0 else source.sample(i)
                        feeds = feeds0 if i == 0 else onnx_feeds(sample, index.graph_inputs, input_dtypes)
                        _check_finite_onnx_inputs(feeds)
                        run_sample(p, acc, i, sample, feeds, cancel, _check_finite_outputs)
                    else:
                        samples = [sample0 if i == 0 else source.sample(i) for i in ids]
                        capture_batch.run_chunk(p, acc, ids, samples, cancel, _check_finite_outputs,
                                                _check_finite_onnx_inputs)
                    i = ids[-1]
                    done += len(ids)
                    last_of_window = i == n - 1
                    if done < total and ((wi == 0 and ids[0] == 0) or last_of_window):
                        partial = self._result(cfg, index, calls, plan, acc, local is not None,
                                               n if wi > 0 else i + 1, exporter, timings, windows, extra)
                        progress(Progress("samples", done, total, f"sample {i + 1}/{n}{_win(wi, windows)}",
                                          partial))
                    elif done < total:
                        progress(Progress("samples", done, total, f"sample {i + 1}/{n}{_win(wi, windows)}"))
                del p, main, local_sess
        timings["samples"] = time.perf_counter() - t_samples - timings.get("sessions", 0.0)
        timings["per_sample"] = timings["samples"] / n
        if len(windows) == 1 and acc.sample_times:
            timings["per_sample_median"] = float(np.median(acc.sample_times))
        timings["local_runs"] = float(acc.local_runs)
        timings["total"] = time.perf_counter() - t0
        result = self._result(cfg, index, calls, plan, acc, local is not None, n, exporter, timings, windows, extra)
        progress(Progress("done", total, total, "done"))
        return result

    def _observer_check(self, cfg: Config, proto: Any, feeds0: dict, index: GraphIndex, plan: Plan,
                        windows: list[Window], local: Any) -> tuple[list[Window], Any]:
        """Sample 0, plain vs instrumented model outputs (core/observer.py); returns the windows (the
        calls whose marking changes the numbers moved to a window of their own) and window 0's session
        when it can be reused."""
        assert self.workdir is not None
        t = time.perf_counter()
        outs = list(index.graph_outputs)

        def run_marked(values: list[str]) -> dict[str, np.ndarray]:
            sess = capture_ort.make_session(proto, cfg.opt_level, cfg.deterministic, cfg.provider, self.workdir,
                                            "observer.onnx", extra_outputs=values)
            return capture_ort.run(sess, feeds0, outs)

        marked = [v for v in windows[0].values if v not in set(outs)]
        main = capture_ort.make_session(proto, cfg.opt_level, cfg.deterministic, cfg.provider, self.workdir,
                                        "main.onnx", extra_outputs=windows[0].values)
        effect = observer.find_marked_effect(marked, capture_ort.run(main, feeds0, outs), run_marked)
        moved = observer.owners_of(plan, effect.values)
        owners = {v: [self.calls[ci].module or "<root>" for ci in observer.owners_of(plan, [v])]
                  for v in effect.values}
        self._observer = observer.summarise(effect, owners, moved, cfg.opt_level)
        self._timings["observer"] = time.perf_counter() - t
        if not moved:
            return windows, main
        windows = observer.split_windows(windows, effect.values, plan)
        attach_local(windows, local, plan)
        observer.annotate(plan, moved)
        return windows, None

    def _result(self, cfg: Config, index: GraphIndex, calls: list[Call], plan: Plan, acc: Accum,
                local_available: bool, samples: int, exporter: str, timings: dict[str, float],
                windows: list[Window], extra_notes: list[str]) -> Result:
        glob, out_aggs, top1 = acc.glob, acc.out_aggs, acc.top1
        loc = acc.local_aggs()
        local_first = acc.local_first
        if self._details is None:     # static (graph, weights): the same for the partial and final results
            self._details = layer_details(index, plan, calls, self.model)
        details = self._details
        verdict = decide(calls, plan, glob, loc, local_first, local_available, details[1])
        layers = make_layers(calls, plan, verdict.statuses, glob, loc, *details)
        outputs = []
        for k, name in enumerate(index.graph_outputs):
            agg = out_aggs[k]
            if not agg.samples:
                continue
            shape = [d if isinstance(d, int) else -1 for d in index.shapes.get(name, [])]
            outputs.append(Output(name, k, shape, agg.to_metrics(),
                                  top1[k][0] / top1[k][1] if top1[k][1] else None))
        out_fail = any(a.fails() for a in out_aggs if a.samples)
        notes = list(verdict.notes)
        if not plan.localized:
            notes.append(f"per-layer localisation was not possible: {plan.reason}; the verdict rests on "
                         "the model outputs")
        elif local_available is False:
            notes.append("local errors were not computed (the graph has control flow or untyped feeds)")
        if out_fail and verdict.origin is None and plan.localized and UNATTRIBUTED not in verdict.statuses:
            notes.append("the outputs drift but no mapped module owns the error: the responsible nodes are "
                         "not tied to a module (see unmapped layers)")
        if self._observer is not None and self._observer.note:
            notes.append(self._observer.note)
        notes.extend(extra_notes)
        drift = verdict.origin is not None or out_fail
        return Result(
            schema_version=SCHEMA_VERSION,
            verdict="drift" if drift else "ok",
            drift_origin=make_origin(layers, verdict.origin),
            tolerance=Tolerance(cfg.atol, cfg.rtol, dtype=DTYPE_RULE),
            samples=samples,
            layers=layers,
            outputs=outputs,
            coverage=coverage(verdict.statuses, plan),
            environment=_environment(cfg, index, exporter),
            config=cfg,
            timings={k: round(v, 4) for k, v in timings.items()},
            notes=notes,
            windows=[[w.first, w.last] for w in windows],
            observer=self._observer,
        )


@contextlib.contextmanager
def _unfreeze() -> Any:
    try:
        yield
    finally:
        gc.unfreeze()


def _win(wi: int, windows: list[Window]) -> str:
    return f", window {wi + 1}/{len(windows)}" if len(windows) > 1 else ""


def _graph_inputs(proto: Any) -> list[tuple[str, list[Any], str]]:
    inits = {t.name for t in proto.graph.initializer}
    out = []
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]
        out.append((vi.name, dims, elem_type_name(tt.elem_type)))
    return out


def _safe_forward(model: Any, sample: Any) -> list[torch.Tensor]:
    from drifttui.errors import Cancelled

    try:
        return run_model(model, sample[0], sample[1], versioned=True)
    except (Cancelled, InputError, ModelError):
        raise
    except Exception as exc:
        msg = first_line(exc)
        shapes = ", ".join("x".join(map(str, t.shape)) for t in flatten(sample))
        raise InputError(f"the PyTorch model failed on inputs of shape {shapes}: {type(exc).__name__}: {msg[:300]}",
                         "give inputs the model accepts (--inputs)") from exc


def _check_finite_outputs(outs: list[torch.Tensor], i: int) -> None:
    for k, t in enumerate(outs):
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ModelError(f"the PyTorch model's output {k} holds NaN/Inf for sample {i}, so there is "
                             "nothing sound to compare",
                             "check the inputs (--inputs) and the weights; drifttui compares finite outputs")


def _check_finite_onnx_inputs(feeds: dict[str, np.ndarray]) -> None:
    for name, a in feeds.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise InputError(f"input {name!r} holds NaN/Inf", "give finite inputs")


def _environment(cfg: Config, index: GraphIndex, exporter: str) -> Environment:
    import onnx
    import onnxruntime as ort

    return Environment(
        torch=torch.__version__, onnx=onnx.__version__, onnxruntime=ort.__version__,
        numpy=np.__version__, python=platform.python_version(), opset=index.opset,
        producer=index.producer_name, exporter=exporter, ort_opt_level=cfg.opt_level,
        threads=1 if cfg.deterministic else 0, deterministic=cfg.deterministic, provider=cfg.provider,
    )
