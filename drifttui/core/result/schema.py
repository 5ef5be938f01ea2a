"""The immutable, JSON-serialisable outcome of one drifttui run.

Everything the CLI prints, the JSON report holds and the TUI shows comes from a
:class:`Result`.  It is plain data (no torch, no onnx objects) so that a saved
report can be browsed on a machine without either.  ``Result.from_dict`` reads
what ``Result.to_dict`` wrote; the layout is documented in ``docs/json-schema.md``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from drifttui.core.result.codec import from_json, to_json

from drifttui.core.result.config import OPT_LEVELS, Config  # noqa: F401  (part of the schema)
from drifttui.core.result.channels import CHANNELS_AROUND, MAX_CHANNELS, OWN_VALUES, Channels  # noqa: F401  (part of the schema)
from drifttui.core.result.precision import LayerBudget, Precision
from drifttui.core.result.served import BatchSweep, Served

SCHEMA_VERSION = 3
#: the report versions this drifttui reads (1: before the CPU fields; 2: before ``precision_origin``,
#: docs/json-schema.md)
READABLE_VERSIONS = (1, 2, 3)

# Layer statuses, in the words of the report.
OK = "ok"
DRIFT = "drift"            # the output fails the tolerance, and so does the module's own computation
INHERITED = "inherited"    # the module's output is off only because its inputs are
FUSED = "fused"            # the exporter merged the module into a neighbour's node
NOT_EXPORTED = "not_exported"  # the module left no node in the graph (identity, dropout, folded away)
UNMAPPED = "unmapped"      # nodes exist, but no ONNX value could be paired with the output
# fails the tolerance, yet neither its own nodes nor an earlier module own the error (e.g. float32
# noise upstream flipping roundings at a precision cast); never silent: a note says why
UNATTRIBUTED = "unattributed"
#: how a layer's note starts the finding that its weight, compared by content, is not the model's
#: (a packed block of a processed file: no value of its own to compare; core/prepare/plan/plan.py)
WEIGHT_NOT_THE_MODELS = "its weight in the file is not the model's"
#: how a layer's note starts the finding that a node's attribute (epsilon, padding, slope...) is not what
#: its torch module declares (core/prepare/attr_check.py)
ATTRIBUTE_NOT_THE_MODELS = "an attribute in the file is not the model's"
STATUSES = (OK, DRIFT, INHERITED, FUSED, NOT_EXPORTED, UNMAPPED, UNATTRIBUTED)

# The one name of the root module in every text (the JSON keeps "" as its qualified name).
ROOT_NAME = "(root)"


def display_name(module: str) -> str:
    return module or ROOT_NAME


def own_op_types(layer: Optional["Layer"], fallback: Optional[list[str]] = None) -> list[str]:
    """The op types of the ONNX nodes a layer owns itself (not its children's: ``Layer.op_types``
    has those too), in graph order; ``fallback`` when the layer owns no node or is unknown.  A
    layer with more own nodes than its details keep (MAX_NODES_PER_LAYER) ends with "…"."""
    if layer is None or not layer.nodes:
        return list(fallback or [])
    ops = list(dict.fromkeys(n.op_type for n in layer.nodes))
    return ops + (["…"] if len(layer.onnx_nodes) > len(layer.nodes) else [])


# Heat/metric columns whose pass/fail the engine decides (Layer.fails keys).
FAIL_COLUMNS = ("max_abs", "max_rel", "local", "cos")

#: the tolerance rule, its one text (tolerance.bound is its arithmetic): the formula every medium prints
RULE_FORMULA = "|torch - onnx| <= atol + rtol * scale"
RULE_SCALE = "scale = the largest |torch| value of that layer output in that sample"
TOLERANCE_RULE = (
    f"an element passes when {RULE_FORMULA}, where {RULE_SCALE} (relative to the layer's scale)"
)
MAX_REL_RULE = "max_rel = max|torch - onnx| / max|torch| over the layer output (the layer's scale)"
LOCAL_RULE = (
    "local error: the module's own ONNX nodes run on the PyTorch-side inputs of those nodes, "
    "compared with the PyTorch output"
)


@dataclass(frozen=True)
class Summary:
    """One metric aggregated over samples: worst value, which sample, and median."""

    worst: float
    worst_sample: int
    median: float


@dataclass(frozen=True)
class Metrics:
    """Per-output comparison aggregated over samples (all float32 arithmetic)."""

    max_abs: Summary
    mean_abs: Summary
    max_rel: Summary
    rmse: Summary
    cosine: Summary            # worst == lowest similarity
    # error spread: fraction of elements whose |d| is at least half the sample's max |d| (near 0: the
    # error sits in a few elements, e.g. a border; near 1: everywhere).  Tolerance-free, so that a
    # tolerance change needs no new capture (the JSON key keeps its old name)
    frac_out: Summary
    nan_mismatch: int          # elements where exactly one side is NaN/Inf, summed over samples
    samples: int
    # counts of per-sample max_abs in fixed log10 bins, see HIST_EDGES
    histogram: tuple[int, ...] = ()
    # of nan_mismatch: torch finite past the file dtype's largest finite number, the file inf on the same
    # side (a float16 overflow); overflow_limit: that number (65504 for float16; 0.0: none)
    overflow: int = 0
    overflow_limit: float = 0.0


# log10(|error|) bin edges for Metrics.histogram: <1e-9, 1e-9..1e-8, ..., >=1e1
HIST_EDGES = tuple(float(e) for e in range(-9, 2))


@dataclass(frozen=True)
class NodeInfo:
    name: str
    op_type: str
    domain: str
    attributes: dict[str, Any]
    inputs: list[str]
    outputs: list[str]
    shapes: dict[str, list[Any]] = field(default_factory=dict)  # value name -> shape


@dataclass(frozen=True)
class InitializerInfo:
    name: str
    dtype: str
    dims: list[int]
    min: float
    max: float
    mean: float
    std: float
    torch_param: Optional[str] = None     # the parameter/buffer it corresponds to, if any
    torch_max_abs_diff: Optional[float] = None  # max |init - param| when shapes agree


@dataclass(frozen=True)
class ParamInfo:
    name: str          # qualified, as in named_parameters()/named_buffers()
    kind: str          # "parameter" | "buffer"
    shape: list[int]
    dtype: str


@dataclass(frozen=True)
class Layer:
    """One module call, in execution order."""

    index: int
    module: str                 # qualified name as in named_modules(); "" is the root
    cls: str                    # class name ("class" in JSON)
    call: int                   # 0 for the first call of this module, 1 for the second...
    depth: int
    parent: Optional[int]       # index of the enclosing module call
    status: str
    onnx_values: list[str]
    op_types: list[str]
    onnx_nodes: list[str]
    output_shapes: list[list[int]]
    metrics: Optional[Metrics] = None
    local: Optional[Metrics] = None   # own error (LOCAL_RULE); None when not computed
    note: str = ""
    nodes: list[NodeInfo] = field(default_factory=list)
    initializers: list[InitializerInfo] = field(default_factory=list)
    params: list[ParamInfo] = field(default_factory=list)
    # per metric column (FAIL_COLUMNS), whether it fails the tolerance: written only by the
    # engine's decide stage; the TUI and the reports render it and never re-derive it
    fails: dict[str, bool] = field(default_factory=dict)
    budget: Optional[LayerBudget] = None   # reduced-precision files only
    channels: Optional[Channels] = None      # per-channel errors (origin and its neighbours; None elsewhere)


@dataclass(frozen=True)
class Output:
    name: str                    # ONNX output name
    index: int
    shape: list[int]
    metrics: Metrics
    top1_agreement: Optional[float] = None   # classifier-like outputs only
    fails: bool = False          # fails the tolerance in some sample: decided by the engine's decide stage
    dtype: str = ""              # the torch output's dtype ("" in older reports)
    onnx_dtype: str = ""         # ONNX Runtime's: a difference is a note, never a silent pass
    nan_samples: list[int] = field(default_factory=list)   # samples where ORT gave NaN/Inf and torch did not


@dataclass(frozen=True)
class Origin:
    layer: int
    module: str
    cls: str
    call: int
    onnx_values: list[str]
    op_types: list[str]
    max_abs: float
    max_rel: float
    local_max_abs: Optional[float]
    worst_sample: int


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    rule: str = TOLERANCE_RULE
    max_rel: str = MAX_REL_RULE
    local: str = LOCAL_RULE
    dtype: str = ""       # the dtype-aware rule (core/tolerance.py DTYPE_RULE); "" in old reports


@dataclass(frozen=True)
class Coverage:
    modules: int       # module calls
    mapped: int
    fused: int
    not_exported: int
    unmapped: int
    localized: bool    # per-layer localisation was possible
    reason: str = ""   # why not, when localized is False


@dataclass(frozen=True)
class ObserverCheck:
    """Sample 0: the instrumented ORT session's model outputs against a plain session's (core/capture/observer.py)."""

    checked: bool                  # False: not run (no extra outputs, or the graph could not be re-run)
    identical: bool                # bit for bit equal: marking values changed nothing
    max_abs: float = 0.0           # largest |plain - instrumented| over the model outputs
    values: list[str] = field(default_factory=list)   # marked values whose marking changes the outputs
    layers: list[int] = field(default_factory=list)   # layers paired with them (compared in their own window)
    note: str = ""


@dataclass(frozen=True)
class Environment:
    torch: str
    onnx: str
    onnxruntime: str
    numpy: str
    python: str
    opset: Optional[int]
    producer: str
    exporter: str            # "dynamo", "torchscript" (the one that produced the file) or "user file"
    ort_opt_level: str
    threads: int
    deterministic: bool
    provider: str
    ort_output_opt_level: str = ""   # the output pass's level ("" in reports older than it)
    cpu: str = ""                    # the processor's features int8 kernels depend on (runtime/cpu.py; "" before v2)
    int8_kernel: str = ""            # the u8s8 kernel it runs, e.g. "AVX2 (saturating u8s8)", "AVX-512 VNNI"


STEP_TITLES = {
    1: "Real or capture artifact",
    2: "Zero-input bisect",
    3: "The origin's ONNX node",
    4: "Tolerance bisect",
    5: "Determinism",
    6: "Custom-module causes",
}


@dataclass(frozen=True)
class Step:
    step: int
    title: str
    verdict: str       # pass | fail | inconclusive | skipped
    summary: str
    evidence: dict[str, Any]
    suggestion: str
    layers: list[int] = field(default_factory=list)   # layer indices the step names


#: findings rank by severity in this order (lower first)
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str      # error | warning | info
    module: Optional[str]
    onnx_nodes: list[str]
    message: str
    evidence: dict[str, Any]
    fix: str
    # counterfactual verification (docs/drift-catalogue.md): True when applying ``patch`` to the
    # origin's own nodes, fed with the PyTorch-side inputs, brings its local error under the
    # tolerance; False when it did not; None when no patch was tried
    verified: Optional[bool] = None
    patch: Optional[dict[str, Any]] = None       # machine-readable: what was changed
    local_before: Optional[float] = None         # origin's local max |d| before the patch
    local_after: Optional[float] = None          # ... and after it
    kind: str = "unknown"                        # runtime | export | model | precision | unknown
    # the torch op the origin's drift starts in, as the forward called it, the same for either exporter
    # (``torch.Tensor.var``, ``torch.logaddexp``): a dynamo file's FX record (its node's torch_fn), a TorchScript
    # file's torch calls aligned by value; None when it cannot be told (the ONNX ops say it)
    torch_op: Optional[str] = None
    aten_op: Optional[str] = None                # the ATen op that call is (``aten.var.correction``), when one


@dataclass(frozen=True)
class Result:
    schema_version: int
    verdict: str                       # "ok" | "drift"
    drift_origin: Optional[Origin]
    tolerance: Tolerance
    samples: int
    layers: list[Layer]
    outputs: list[Output]
    coverage: Coverage
    environment: Environment
    config: Config
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    windows: list[list[int]] = field(default_factory=list)   # [first, last] layer index per capture window
    steps: list[Step] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)   # ranked: the headline cause first
    observer: Optional[ObserverCheck] = None   # the observer-effect check on sample 0 (None: old report)
    precision: Optional[Precision] = None      # the deployed file's precision (None: old report)
    served: Optional[Served] = None            # the served model (Triton): --triton-repo / --triton-url
    batch_sweep: Optional[BatchSweep] = None   # --batch-sweep (or a served batch dependence)
    # a reduced-precision file whose drift origin is a genuine drift (a weight that is not the model's, a
    # float layer's own error): the first layer over its precision budget, the precision story beside it
    precision_origin: Optional[Origin] = None

    @property
    def headline(self) -> Optional[Finding]:
        """The headline cause: the first finding (findings are ranked by the engine)."""
        return self.findings[0] if self.findings else None

    # -- serialisation -------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return to_json(self)

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The JSON report (docs/json-schema.md) as text; ``Result.from_dict(json.loads(...))`` reads it."""
        import json

        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Result":
        version = data.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise ValueError(
                f"report schema_version {version!r} is not supported (this drifttui reads "
                f"{', '.join(map(str, READABLE_VERSIONS))})"
            )
        return from_json(cls, data)

    def with_(self, **changes: Any) -> "Result":
        import dataclasses

        return dataclasses.replace(self, **changes)


def summary_of(values: list[float], samples: list[int], worst: str = "max") -> Summary:
    """Aggregate one metric over samples; ``worst`` is "max" or "min"."""
    import statistics

    if not values:
        return Summary(0.0, -1, 0.0)
    pick = max if worst == "max" else min
    best_i = pick(range(len(values)), key=lambda i: (values[i] if values[i] == values[i] else float("inf")))
    return Summary(float(values[best_i]), int(samples[best_i]), float(statistics.median(values)))
