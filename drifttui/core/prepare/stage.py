"""Stage 1, ``prepare(config) -> Prepared``: everything that depends on the model, not on the samples.

Load the model, export it (or read the user's ONNX file), index the graph, trace the module
calls on one sample, map calls to ONNX values (the plan), build the local graph and the capture
windows, and collect the static per-layer details.  A :class:`Prepared` is reused by every
capture whose :func:`prepare_key` is the same (see ``core/pipeline.py``): a determinism,
zero-input, ORT-level, samples or seed change never exports again.

The trace sample is drawn with seed 0 and never zeroed, whatever the config says, so that a
``Prepared`` made for one capture configuration is exactly the one a fresh run of another
would make.
"""
from __future__ import annotations

import dataclasses
import shutil
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from drifttui.core.prepare import act_levels, batch_probe, precision, reference
from drifttui.core.prepare.qat import QUANTIZERS, torch_quantizers
from drifttui.core.runtime.fake_quant import recorded
from drifttui.core.runtime.torch_hooks import Call, Hooks, TensorRef, hookable
from drifttui.core.prepare.details import LayerDetails, layer_details
from drifttui.core.prepare.inlined import inline_local_functions
from drifttui.core.prepare.arity import check_output_count
from drifttui.core.model.export import export_auto, export_model, opset_note
from drifttui.core.onnx.graph import DYNAMO, TORCHSCRIPT, GraphIndex, build_index, elem_type_name
from drifttui.core.runtime.guards import safe_forward
from drifttui.core.prepare.hook_routing import inspects_hooks, observation_changes, routed_note
from drifttui.core.prepare.sample_zero import onnx_values, torch_inputs, torch_outputs
from drifttui.core.model.half_inputs import half_inputs
from drifttui.core.model.inputs import InputSource, build_source, flatten, onnx_feeds
from drifttui.core.model.loading import load_onnx, load_torch_model, new_workdir
from drifttui.core.prepare.local import LocalGraph, build_local_graph
from drifttui.core.prepare.plan.absorbed import split_units
from drifttui.core.prepare.plan.orphans import map_orphans
from drifttui.core.prepare.plan.mapping import build_plan
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, heartbeat, no_progress
from drifttui.core.prepare.reference_check import same_as_onnx
from drifttui.core.result import Config
from drifttui.core.model.spec import InputSpec, parse_input_spec, parse_model_spec
from drifttui.core.prepare.budget import plan_budget, window_notes
from drifttui.core.prepare.call_budgets import CallBudget, call_budgets
from drifttui.core.prepare.folded_constants import folded_constants
from drifttui.core.prepare.qweight_check import weight_checks
from drifttui.core.prepare.attr_check import attr_checks
from drifttui.core.prepare.attr_consts import const_checks
from drifttui.core.prepare.unit_members import unit_checks
from drifttui.core.prepare.windows import Window, attach_local, plan_windows
from drifttui.errors import ModelError

# the Config fields a Prepared depends on (with the files they name, see pipeline.fingerprint)
KEEP_OUTPUTS_BYTES = 256 << 20     # the trace's outputs are kept for the determinism check up to this

PREPARE_FIELDS = ("model", "onnx", "reference_onnx", "exporter", "inputs", "example", "provider", "batch", "max_memory",
                  "trust_model_file")


@dataclass(frozen=True)
class Prepared:
    """The model side of a run: immutable once built, shared by captures and the debugging steps."""

    config: Config                 # the config it was prepared for (only PREPARE_FIELDS matter)
    model: Any
    example: Any                   # the built-in Example, or None
    input_spec: InputSpec
    onnx_inputs: Optional[list[tuple[str, list[Any], str]]]   # the user file's inputs (for --inputs)
    index: GraphIndex
    exporter: str                  # as reported in Environment.exporter
    input_dtypes: dict[str, str]
    hooks: Optional[Hooks]         # None when the model cannot be hooked (TorchScript...)
    calls: list[Call]
    plan: Plan
    local: Optional[LocalGraph]
    windows: list[Window]
    budget: Optional[int]          # --max-memory per sample of a batch, when applied
    batch: int                     # --batch in effect after the torch-side probe
    notes: list[str]               # about windows and --batch
    details: LayerDetails          # static per-layer details (their initializers' figures in the background)
    workdir: Path                  # removed when the Prepared is garbage collected
    timings: dict[str, float]      # load, export, map
    # the file's precision (precision.scan: float16 / bfloat16 / int8 nodes) and, when reduced, the
    # budgets decide applies: (call -> call_budgets.CallBudget, the model outputs' budget)
    precision: Optional[precision.PrecisionScan] = None
    budgets: Optional[tuple[dict[int, CallBudget], float]] = None
    # torch's model outputs of the trace forward, on sample 0 of seed 0 (no --zero-input): the
    # capture's determinism self-check compares them with its own forward instead of running another
    outputs0: tuple = ()
    # the file as ONNX Runtime loads it when ``index`` holds drifttui's views (reference.py), else None
    given: Any = None

    def traced_outputs(self, seed: int, zero: bool) -> Optional[list]:
        """The trace's outputs when the capture's sample 0 is the trace's sample 0."""
        return list(self.outputs0) if self.outputs0 and seed == 0 and not zero else None

    @property
    def proto(self) -> Any:
        return self.index.model

    @property
    def deployed(self) -> Any:
        """What the output passes run: the file as given, not drifttui's views, which change what ORT fuses at
        ``all`` (a Reshape view after an ORT-optimised BERT's Gemm: "Attempt to replace the existing tensor")."""
        return self.index.model if self.given is None else self.given

    def source(self, seed: int, zero: bool) -> InputSource:
        return build_source(self.input_spec, seed, zero, self.onnx_inputs, self.example)

    def feeds(self, sample: Any) -> dict:
        return onnx_feeds(sample, self.index.graph_inputs, self.input_dtypes)


def prepare(config: Config, progress: ProgressFn = no_progress, cancel: Optional[CancelToken] = None) -> Prepared:
    cancel = cancel or CancelToken()
    workdir = new_workdir()
    try:
        prepared = _prepare(config, workdir, progress, cancel)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    weakref.finalize(prepared, shutil.rmtree, str(workdir), True)
    return prepared


def _prepare(cfg: Config, workdir: Path, progress: ProgressFn, cancel: CancelToken) -> Prepared:
    timings: dict[str, float] = {"load": 0.0, "export": 0.0, "map": 0.0}
    notes: list[str] = []
    loaded = _load(cfg, workdir, progress, timings, notes)
    model, example, in_spec, gi, sample0, proto, onnx_path, exporter, batch = loaded
    cancel.check()
    t = time.perf_counter()
    index = build_index(proto, onnx_path)
    pscan = precision.scan(index, sizes=precision.model_sizes(model))
    if pscan.reduced:
        precision.rescope_quantizers(index)
    exporter = _file_exporter(index) if exporter == "user file" else exporter
    input_dtypes = {name: dt for name, _, dt in graph_inputs(proto)}
    notes.extend(_half_inputs_note(gi))
    feeds0 = onnx_feeds(sample0, index.graph_inputs, input_dtypes)    # refuses inputs that do not fit first
    progress(Progress("map", message="tracing module calls and mapping them to ONNX values"))
    ok_hooks, why_not = hookable(model)
    hooks = Hooks(model) if ok_hooks else None
    calls, map_index, outputs0, fake_quants = _trace_and_map(cfg, model, hooks, why_not, index, sample0, feeds0,
                                                             workdir)
    notes.extend([hooks.routed_note] if hooks is not None and hooks.routed else [])
    plan = map_index(index)
    found = None
    if hooks is not None:
        same = same_as_onnx(cfg)      # --reference-onnx is --onnx itself: said, and mapped without it
        notes.extend([same] if same else [])
        found = reference.transfer(dataclasses.replace(cfg, reference_onnx=None) if same else cfg, model, sample0,
                                   feeds0, index, calls, workdir, map_index, notes,
                                   _split(cfg, calls, map_index, hooks, model, sample0, workdir))
        if found is not None:
            if found[0] is not index:     # views added (qviews, NCHWc, Transpose, Reshape): node indices moved
                pscan = precision.scan(found[0], sizes=pscan.sizes)
            index, plan, mapped_note, exporter = found[0], found[1], found[2], found[3] or exporter
            notes.append(mapped_note)
    if hooks is not None and found is None and plan.localized:     # outputs the exporter absorbed into a reader
        index, plan = split_units(index, calls, plan, map_index, torch_outputs(hooks, model, sample0),
                                  onnx_values(cfg.provider, feeds0, workdir), torch_inputs(hooks, model, sample0))
        index, plan = map_orphans(index, calls, plan, map_index)     # calls whose computation the exporter dropped
        pscan = precision.scan(index, sizes=pscan.sizes) if pscan.reduced else pscan
    details = layer_details(index, plan, calls, model, timings)    # the figures start in the background
    batch = _probed_batch(cfg, batch, hooks, model, sample0, plan, calls, notes)
    local = _local_graph(cfg, index, plan, calls, sample0, workdir, notes) if hooks is not None else None
    pscan = _with_levels(cfg, index, pscan, feeds0, workdir, torch_quantizers(index, fake_quants))
    mem = plan_budget(cfg.max_memory, index, hooks is not None)
    budget = mem.activations if hooks is not None else None
    windows, total_bytes = plan_windows(plan, calls, index, max(1, budget // batch) if budget else budget,
                                        set(index.graph_inputs))
    attach_local(windows, local, plan)
    notes[:0] = mem.notes + window_notes(cfg.max_memory, hooks is not None, windows, budget, total_bytes, mem)
    budgets = call_budgets(pscan, index, plan, calls)
    made_by = reference.file_exporter(index, "dynamo" if "dynamo" in exporter else "torchscript")
    _content_checks(index, calls, plan, model, pscan, budgets, workdir, sample0,
                    lambda: unit_checks(calls, plan, model, hooks, sample0, made_by, cfg.provider, timings))
    timings["map"] = time.perf_counter() - t
    return Prepared(config=cfg, model=model, example=example, input_spec=in_spec, onnx_inputs=gi, index=index,
                    exporter=exporter, input_dtypes=input_dtypes, hooks=hooks, calls=calls, plan=plan, local=local,
                    windows=windows, budget=budget, batch=batch, notes=notes, details=details, workdir=workdir,
                    timings=timings, precision=pscan, budgets=budgets, outputs0=outputs0,
                    given=proto if index.model is not proto else None)


def _file_exporter(index: GraphIndex) -> str:
    return {DYNAMO: "dynamo (from the file's metadata)",
            TORCHSCRIPT: "torchscript (from the file's node names)"}.get(index.flavour, "unknown")


def _split(cfg: Config, calls: list[Any], map_index: Any, hooks: Any, model: Any, sample0: Any,
           workdir: Path) -> reference.Split:
    """A reference export's outputs absorbed into a reader, found as a raw export's (plan/absorbed.py)."""
    return lambda ix, p, feeds: split_units(ix, calls, p, map_index, torch_outputs(hooks, model, sample0),
                                            onnx_values(cfg.provider, feeds, workdir),
                                            torch_inputs(hooks, model, sample0))


def _content_checks(index: Any, calls: list[Any], plan: Any, model: Any, pscan: Any, budgets: Any,
                    workdir: Path, sample0: Any, units: Callable[[], dict[int, Any]]) -> None:
    """Each call's checks by content, on its plan entry: int8 weights, attributes and an activation's constants
    against the model's own, and a module absorbed with no value against its own export alone (``units``)."""
    found = weight_checks(index, calls, model, budgets[0], lambda sizes: folded_constants(model, sample0, sizes))
    attrs = attr_checks(index, calls, plan, model)
    attrs.update(const_checks(index, calls, plan, model, pscan.nodes, workdir, skip=set(attrs)))
    for by_call in (found, attrs):
        for c, checks in by_call.items():
            plan.calls[c].weights.extend(checks)
    for c, unit in units().items():
        plan.calls[c].weights.append(unit)


def _probed_batch(cfg: Config, batch: int, hooks: Any, model: Any, sample0: Any, plan: Any, calls: list,
                  notes: list[str]) -> int:
    """The capture's batch, or 1 (said in ``notes``) when the model's modules depend on the batch."""
    if batch <= 1:
        return batch
    if hooks is None:
        return _no_batch(cfg, notes, "batched capture needs module hooks")
    with hooks.installed():
        why = batch_probe.probe_torch(hooks, model, safe_forward, sample0, batch_probe.base_dims(plan, calls))
    return _no_batch(cfg, notes, why) if why else batch


def _local_graph(cfg: Config, index: Any, plan: Any, calls: list, sample0: Any, workdir: Path,
                 notes: list[str]) -> Any:
    """The graph cut at the module boundaries (own errors), or None (said) where ORT refuses a
    processed file's cut."""
    local = build_local_graph(index, plan, calls, [TensorRef.of(t) for t in flatten(sample0)])
    if local is not None and reference.processed_by(index):
        why_local = reference.loads(local.model, cfg.provider, workdir, index.data_dir)
        if why_local:
            notes.append(f"no own (local) errors: ONNX Runtime refuses this processed graph cut at the module "
                         f"boundaries ({why_local}); statuses come from the outputs alone")
            return None
    return local


def _half_inputs_note(gi: Any) -> list[str]:
    halves = half_inputs(gi)
    if not halves:
        return []
    return [f"the file takes float16 inputs ({', '.join(halves)}): each sample is rounded to float16 once and both "
            "models get those values (PyTorch in float32), so the inputs' own rounding is not counted; a float16 "
            "conversion with keep_io_types=True keeps float32 inputs"]


def _with_levels(cfg: Config, index: GraphIndex, pscan: precision.PrecisionScan, feeds0: dict,
                 workdir: Path, own: frozenset[int] = frozenset()) -> precision.PrecisionScan:
    """An int8 file's scan with each activation's step measured from its own scale on sample 0
    (act_levels.py) instead of the assumed 2/255; the scan as it is when that run fails.  ``own``: the
    quantizers PyTorch rounds at too (the model's fake quantisation, qat.py), without a budget."""
    if own:
        pscan = precision.scan(index, pscan.levels, own, pscan.sizes)
    if "int8" not in pscan.formats:
        return pscan
    feeds = dict(zip(index.graph_inputs, feeds0.values()))
    try:
        levels = act_levels.measure(index, pscan.nodes, lambda values: reference.markable_run(
            index, values, feeds, cfg.provider, workdir)[0])
    except ModelError:
        return pscan
    return precision.scan(index, levels, pscan.own, pscan.sizes) if levels else pscan


def export_message(cfg: Config) -> str:
    """``exporting net.py:Net with the dynamo exporter…`` (the model as given, without its folders)."""
    exporter = "dynamo" if cfg.exporter == "auto" else cfg.exporter
    return f"exporting {cfg.model.replace(chr(92), '/').rsplit('/', 1)[-1]} with the {exporter} exporter…"


def _load(cfg: Config, workdir: Path, progress: ProgressFn, timings: dict[str, float], notes: list[str]) -> tuple:
    """Load the model and the inputs spec; read the user's ONNX file or export (times in ``timings``)."""
    t0 = time.perf_counter()
    progress(Progress("load", message="loading the model"))
    spec = parse_model_spec(cfg.model)
    example = None
    if spec.kind == "example":
        from drifttui.core.model.examples import get_example   # lazy: only an example: spec needs the examples

        example = get_example(spec.example or "")
    model = load_torch_model(spec, trust=cfg.trust_model_file)
    in_spec = parse_input_spec(cfg.inputs)
    batch = cfg.batch
    proto, gi, onnx_path = None, None, None
    if cfg.onnx:
        proto, onnx_path = load_onnx(Path(cfg.onnx), workdir, notes)
        notes.extend(inline_local_functions(proto, model))     # export_modules_as_functions: ORT inlines them too
        gi = graph_inputs(proto)
        static = batch_probe.static_inputs(gi) if batch > 1 else []
        if static:
            batch = _no_batch(cfg, notes, f"the ONNX file's input(s) {', '.join(static[:5])} have a static dim 0")
    sample0 = build_source(in_spec, 0, False, gi, example).sample(0)
    timings["load"] = time.perf_counter() - t0
    exporter = "user file"
    if proto is None:
        t = time.perf_counter()
        with heartbeat(progress, "export", export_message(cfg)):
            try:
                path, exporter, why = export_auto(
                    lambda name: _export(model, example, sample0, name, workdir, batch > 1), cfg.exporter)
            except ModelError as exc:
                if batch == 1:
                    raise
                batch = _no_batch(cfg, notes, f"the export with a dynamic batch dim failed ({exc.problem})")
                path, exporter, why = export_auto(
                    lambda name: _export(model, example, sample0, name, workdir, False), cfg.exporter)
        if why:
            notes.append(why)       # --exporter auto: why dynamo failed, which exporter made the file
        proto, onnx_path = load_onnx(path, workdir)
        note = opset_note(exporter, next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None))
        notes.extend([note] if note else [])
        timings["export"] = time.perf_counter() - t
    return model, example, in_spec, gi, sample0, proto, onnx_path, exporter, batch


def _trace_and_map(cfg: Config, model: Any, hooks: Optional[Hooks], why_not: str, index: GraphIndex,
                   sample0: Any, feeds0: dict, workdir: Path
                   ) -> tuple[list[Call], Callable[[GraphIndex], Plan], tuple, list]:
    """Trace the module calls on sample 0; return them, the mapper of a graph onto them, torch's
    outputs of that forward and (a file with QuantizeLinear / DequantizeLinear) the model's own
    fake-quantise calls in it (runtime/fake_quant.py)."""
    qdq = any(n.op_type in QUANTIZERS for n in index.nodes)
    if hooks is not None:
        outs, fake_quants = _hooked_trace(model, hooks, sample0, qdq)
        changed = observation_changes(model, sample0, outs, cfg.atol, cfg.rtol) if inspects_hooks(model) else None
        if changed is not None:         # a module chose another path under the hooks: observe it as it runs
            hooks.routed, hooks.routed_note = True, routed_note(changed)
            outs, fake_quants = _hooked_trace(model, hooks, sample0, qdq)
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
        with recorded(qdq) as fake_quants:
            outs = safe_forward(model, sample0)
        calls = [Call(0, "", type(model).__name__, 0, 0, None, outputs=[TensorRef.of(o) for o in outs])]
        names, has_params = [""], {"": False}
        aliases, multi_out = {}, {}
    check_output_count(len(outs), index.graph_outputs)

    on_sample0 = onnx_values(cfg.provider, feeds0, workdir)
    torch_in = torch_inputs(hooks, model, sample0) if hooks is not None else None

    def map_index(ix: GraphIndex) -> Plan:
        # sample 0 through ONNX Runtime (optimisations off) for content-based output pairing
        plan = build_plan(ix, calls, names, has_params, aliases, lambda values: on_sample0(ix, values), multi_out,
                          torch_in)
        if hooks is None:
            plan.localized = False
            plan.reason = why_not
        return plan
    kept = tuple(o.detach() for o in outs)
    small = sum(o.numel() * o.element_size() for o in kept if hasattr(o, "numel")) <= KEEP_OUTPUTS_BYTES
    return calls, map_index, kept if small else (), fake_quants


def _hooked_trace(model: Any, hooks: Hooks, sample0: Any, qdq: bool) -> tuple[list, list]:
    """The traced forward of sample 0 under ``hooks``: torch's outputs and the model's fake-quantise calls."""
    with hooks.installed(), recorded(qdq) as fake_quants:
        hooks.begin(None, tracing=True)
        outs = safe_forward(model, sample0)
    return outs, fake_quants


def _export(model: Any, example: Any, sample0: Any, exporter: str, workdir: Path, dynamic: bool) -> Path:
    if example is not None and example.needs_custom_export():
        return example.export(model, sample0, exporter, workdir, dynamic=dynamic)
    return export_model(model, sample0[0], sample0[1], exporter, workdir, dynamic=dynamic)


def _no_batch(cfg: Config, notes: list[str], why: str) -> int:
    notes.append(f"--batch {cfg.batch} was not applied (samples ran one at a time): {why}")
    return 1


def graph_inputs(proto: Any) -> list[tuple[str, list[Any], str]]:
    inits = {t.name for t in proto.graph.initializer}
    out = []
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]
        out.append((vi.name, dims, elem_type_name(tt.elem_type)))
    return out
