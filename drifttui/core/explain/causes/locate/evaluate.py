"""Run a :class:`~drifttui.core.explain.causes.locate.case_data.Case` in ONNX Runtime and in the ONNX reference
implementation, measure its error against PyTorch, and localise the first node that goes wrong.

``kind`` (docs/drift-catalogue.md): ``runtime`` when ``onnx.reference.ReferenceEvaluator`` (the
spec's own implementation) agrees with PyTorch and ONNX Runtime does not; ``export`` when the
graph itself computes something else than PyTorch (the reference evaluator drifts too);
``model`` is decided by the patches (a weight or tensor attribute that differs); ``unknown``
when the reference evaluator cannot run the nodes.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Optional

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.explain.causes.locate.case_data import Case, judged
from drifttui.core.explain.causes.locate.localise_nodes import deviating, own_errors
from drifttui.core.base.metrics import Stats, compare
from drifttui.core.onnx.lacking import lacking
from drifttui.core.explain.causes.locate.cone import cone_model
from drifttui.core.explain.causes.locate.exact_unary import new_ops
from drifttui.core.onnx.edit.numerics.widen import to_float64
from drifttui.core.runtime.passes.settings import ORT_ENUM


@dataclass
class Eval:
    max_abs: float
    fails: bool
    ok: bool = True                 # the model ran
    error: str = ""
    nonfinite: int = 0              # elements inf/NaN on one side only (then max_abs is inf)
    n_out: int = 0                  # elements over the tolerance (0 when not counted)
    widened: bool = False           # passes only at the wider budget its patch is judged at (``judged_error``)

    def text(self) -> str:
        """The error figure as a message says it: 'inf (3 element(s) inf/NaN where torch is finite)'."""
        return figure(self.max_abs, self.nonfinite)


def figure(max_abs: float, nonfinite: int = 0) -> str:
    if nonfinite:
        return f"{max_abs:.3g} ({nonfinite} element(s) inf/NaN on one side only)"
    return f"{max_abs:.3g}"


@dataclass
class Localisation:
    ort: Eval
    reference: Optional[Eval]
    kind: str
    first_node: Optional[str] = None      # first node whose ORT and reference values disagree
    first_node_op: Optional[str] = None
    node_diffs: list[dict[str, Any]] = field(default_factory=list)
    own_errors: list[dict[str, Any]] = field(default_factory=list)   # runtime: each node fed correct inputs
    dwarfed: bool = False                 # export: ONNX Runtime's error dwarfs the graph's own (``DWARFS``)
    note: str = ""
    fx: Any = None                        # fx_localise.FxLocalisation: a dynamo file's nodes against torch
    torch_op: Any = None                  # torch_align.TorchOp: the torch op whose ONNX nodes first differ
    torch_calls: dict[str, Any] = field(default_factory=dict)   # ONNX node -> (torch call, ATen op) it computes
    torch_groups: dict[str, Any] = field(default_factory=dict)  # the same for the calls whose value the file lacks


# The ONNX Runtime level a case runs at: ``disable`` (the nodes as the file writes them), or the per-layer pass's
# level when that is another (the origin was named where ONNX Runtime's optimiser runs: its cut-out nodes are
# judged, and its patches verified, where the drift is made).
LEVEL: contextvars.ContextVar[str] = contextvars.ContextVar("drifttui_case_level", default="disable")


@contextlib.contextmanager
def at_level(level: str) -> Iterator[None]:
    """Cases run at ONNX Runtime ``level`` inside the block."""
    token = LEVEL.set(level if level in ORT_ENUM else "disable")
    try:
        yield
    finally:
        LEVEL.reset(token)


def _session(model: Any, outputs: Optional[list[str]] = None) -> Any:
    import onnx
    import onnxruntime as ort

    if outputs:
        model = copy_model(model)
        have = {o.name for o in model.graph.output}
        for v in outputs:
            if v not in have:
                model.graph.output.append(onnx.ValueInfoProto(name=v))
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, ORT_ENUM[LEVEL.get()])
    so.log_severity_level = 4      # fatal only: a failure is raised, and drifttui says it in one line
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run_ort(model: Any, feeds: dict[str, np.ndarray], outputs: Optional[list[str]] = None,
            types: Optional[Mapping[str, int]] = None) -> dict[str, np.ndarray]:
    """``outputs`` (default: the graph's) on ``feeds``; a value of a type numpy lacks (bfloat16, float8) read
    through an exact Cast to float32 (ONNX Runtime cannot hand it to numpy).  ``types``: the element types the
    caller holds (a case's, its index's: ``onnx/lacking.py``)."""
    names = outputs or [o.name for o in model.graph.output]
    model, read = _readable(model, names, types)
    sess = _session(model, [read.get(v, v) for v in names])
    inputs = {i.name for i in sess.get_inputs()}
    vals = sess.run([read.get(v, v) for v in names], {k: v for k, v in feeds.items() if k in inputs})
    return dict(zip(names, vals))


def numpy_lacks(model: Any, types: Optional[Mapping[str, int]] = None) -> dict[str, int]:
    """The values of ``model`` whose element type numpy lacks (bfloat16, float8), with that type (``types``: those
    the caller holds, the rest by shape inference; {} when unknown): ``run_ort`` reads them as float32."""
    return lacking(model, None, types)


def _readable(model: Any, names: list[str], types: Optional[Mapping[str, int]] = None) -> tuple[Any, dict[str, str]]:
    """``model`` with a Cast to float32 reading each of ``names`` whose type numpy lacks, and value -> the Cast's
    output; ``model`` itself when there is none."""
    import onnx

    lacking_names = list(lacking(model, names, types))
    if not lacking_names:
        return model, {}
    model = copy_model(model)
    read = {v: f"{v}/drifttui_float32" for v in lacking_names}
    model.graph.node.extend(onnx.helper.make_node("Cast", [v], [read[v]], name=f"{v}/drifttui_read",
                                                  to=onnx.TensorProto.FLOAT) for v in lacking_names)
    return model, read


def node_values(case: Case) -> Optional[dict[str, np.ndarray]]:
    """Every node's value on the case's inputs in ONNX Runtime; the outputs alone when a value cannot be
    fetched (a sequence); None when the case does not run."""
    names = [v for n in case.model.graph.node for v in n.output if v]
    try:
        return run_ort(case.model, case.feeds, names, case.elem_types)
    except Exception:  # noqa: BLE001 - a value ORT cannot fetch: the outputs only
        try:
            return run_ort(case.model, case.feeds, types=case.elem_types)
        except Exception:  # noqa: BLE001
            return None


def picked_values(case: Case, pick: Callable[[Any], bool]) -> tuple[list[Any], dict[str, np.ndarray]]:
    """The case's nodes ``pick`` accepts, and every value they can read on the case's inputs (the feeds and
    each node's value in ONNX Runtime); ([], {}) when none is picked or the case does not run (the proposers
    that rewrite one kind of node read their inputs so)."""
    nodes = [n for n in case.model.graph.node if pick(n)]
    vals = node_values(case) if nodes else None
    return (nodes, {**case.feeds, **vals}) if vals is not None else ([], {})


def run_reference(model: Any, feeds: dict[str, np.ndarray], intermediate: bool = False) -> dict[str, np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    ref = ReferenceEvaluator(model, new_ops=new_ops())     # float32 functions correctly rounded, not numpy's SIMD
    names = set(ref.input_names)
    with np.errstate(all="ignore"):       # float16 overflow / inf - inf are numbers the ONNX semantics give
        got = ref.run(None, {k: v for k, v in feeds.items() if k in names}, intermediate=intermediate)
    if intermediate:
        return {k: np.asarray(v) for k, v in got.items()}
    return dict(zip(ref.output_names, (np.asarray(v) for v in got)))


def float64_values(case: Case, intermediate: bool = False, values: Optional[list[str]] = None,
                   known: Optional[dict[str, np.ndarray]] = None, most: int = 0) -> Optional[dict[str, np.ndarray]]:
    """The case's graph computed in float64 by the ONNX reference implementation (``onnx/edit/numerics/widen.py``, float64
    feeds): its outputs, or every value with ``intermediate``; None when the reference cannot run it in float64.
    With ``values``, only the nodes that compute them (at most ``most``, the nearest: ``cone.py``), fed where the
    cut leaves them by ``known`` (the file's own float32 values, widened): a bounded cost on any origin."""
    model, feeds = case.model, dict(case.feeds)
    if values:
        cut = cone_model(case.model, values, most, {**(known or {}), **case.feeds})
        if cut is None:
            return None
        model, feeds = cut
    feeds = {k: v.astype(np.float64) if np.asarray(v).dtype == np.float32 else v for k, v in feeds.items()}
    try:
        return run_reference(to_float64(model), feeds, intermediate=intermediate)
    except Exception:  # noqa: BLE001 - an op the reference cannot run in float64: no evidence either way
        return None


def error(values: dict[str, np.ndarray], expected: dict[str, np.ndarray], atol: float, rtol: float) -> Eval:
    total = Stats()
    for name, want in expected.items():
        if name not in values:
            return Eval(float("inf"), True, False, f"no value for {name}")
        total.add(compare(want, values[name], atol, rtol))
    return Eval(total.max_abs, total.fails(), nonfinite=total.nan_mismatch, n_out=total.n_out)


def ort_error(case: Case, model: Any = None) -> Eval:
    try:
        # a patched copy may retype a value the index knows: its types by shape inference (a bfloat16 file only)
        vals = run_ort(model if model is not None else case.model, case.feeds, list(case.expected),
                       case.elem_types if model is None else None)
    except Exception as exc:  # noqa: BLE001 - a patch that breaks the graph is a failed patch
        return Eval(float("inf"), True, False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    return error(vals, case.expected, case.atol, case.rtol)


OBSERVED = ("ONNX Runtime computes these outputs otherwise when each node's value is fetched too (its graph "
            "transformations, such as the float16 Casts it inserts and removes, then differ): the node values shown "
            "are the observed run's")


def localise(case: Case) -> Localisation:
    """ORT and the reference evaluator on the origin's nodes, node by node."""
    node_outputs = [v for n in case.model.graph.node for v in n.output if v]
    try:
        ort_vals = run_ort(case.model, case.feeds, list(dict.fromkeys(list(case.expected) + node_outputs)),
                           case.elem_types)
    except Exception as exc:  # noqa: BLE001
        e = Eval(float("inf"), True, False, str(exc).splitlines()[0][:200])
        return Localisation(e, None, "unknown", note=f"ONNX Runtime could not run the origin's nodes: {e.error}")
    ort_eval = error(ort_vals, case.expected, case.atol, case.rtol)
    alone = ort_error(case)     # the outputs as the file computes them: fetching every value can change them
    observed = ort_eval.fails != alone.fails
    ort_eval = alone if alone.ok else ort_eval
    try:
        ref_vals = run_reference(case.model, case.feeds, intermediate=True)
    except Exception as exc:  # noqa: BLE001 - the reference implementation lacks some (contrib) ops
        return Localisation(ort_eval, None, "unknown",
                            note=f"the ONNX reference evaluator could not run these nodes "
                                 f"({type(exc).__name__}: {str(exc).splitlines()[0][:160]})")
    ref_eval = error(ref_vals, case.expected, case.atol, case.rtol)
    loc = Localisation(ort_eval, ref_eval, "unknown")
    for n in case.model.graph.node:
        for v in n.output:
            if not v or v not in ort_vals or v not in ref_vals:
                continue
            a, b = ort_vals[v], ref_vals[v]     # a sequence's value is a list: not compared node by node
            if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray) or a.dtype.kind not in "fiub" \
                    or np.shape(a) != np.shape(b):
                continue
            st = compare(b.astype(np.float32), a.astype(np.float32), case.atol, case.rtol)
            loc.node_diffs.append({"node": n.name, "op_type": n.op_type, "value": v, "ort_vs_reference": st.max_abs})
            if st.fails() and loc.first_node is None:
                loc.first_node, loc.first_node_op = n.name, n.op_type
    if ort_eval.fails and not ref_eval.fails:
        loc.kind = "runtime"
        loc.note = ("the ONNX reference implementation matches PyTorch on these nodes and ONNX Runtime does not"
                    + (f": first divergent node {loc.first_node} ({loc.first_node_op})" if loc.first_node else ""))
        _own(case, loc, {**case.feeds, **ref_vals})
    elif ort_eval.fails and ref_eval.fails:
        loc.kind = "export"
        loc.note = ("the ONNX reference implementation computes the same as ONNX Runtime: the graph itself "
                    "computes something else than PyTorch")
        if _dwarfs(ort_eval, ref_eval, case):
            loc.dwarfed = True
            loc.note = (f"the ONNX reference implementation is off PyTorch too ({ref_eval.max_abs:.3g}), but ONNX "
                        f"Runtime is {ort_eval.max_abs / ref_eval.max_abs:.0f} times further off: the graph computes "
                        f"something else than PyTorch, and an ONNX Runtime kernel adds most of the drift")
            _own(case, loc, {**case.feeds, **ref_vals}, name_first=False)
    if observed:
        loc.note = "; ".join(x for x in (loc.note, OBSERVED) if x)
    return loc


DWARFS = 10.0           # ONNX Runtime's error this many times the reference's: a kernel adds most of the drift


def _dwarfs(ort_eval: Eval, ref_eval: Eval, case: Case) -> bool:
    """Two mechanisms stacked: the graph is off torch (the reference evaluator fails too) and ONNX Runtime is
    ``DWARFS`` times further off (a kernel that computes otherwise than the op, on top of a graph that computes
    otherwise than torch)."""
    r, o = ref_eval.max_abs, ort_eval.max_abs
    return bool(np.isfinite(r) and np.isfinite(o) and r > 0 and o >= DWARFS * r and not ref_eval.nonfinite)


def _own(case: Case, loc: Localisation, ref_vals: dict[str, np.ndarray], name_first: bool = True) -> None:
    """The deviating kernel by its own error (each node fed the reference evaluator's inputs), not the
    node that amplifies an upstream error (a Log after a Sigmoid that returns 0); ``name_first``: that kernel is
    the first divergent node said (a graph that is right elsewhere)."""
    errs = own_errors(case.model, ref_vals, run_ort)
    loc.own_errors = [{"node": e.node, "op_type": e.op_type, "own_abs": e.abs_err, "own_rel": e.rel_err,
                       "own_ulps": e.ulps, "flushed": e.flushed, "grows": e.grows} for e in errs]
    dev = deviating(errs, case.atol)
    if not name_first or dev is None or dev.node == loc.first_node:
        return
    loc.note += (f" (accumulated error); {dev.node} ({dev.op_type}) is the first node whose own output is wrong, "
                 f"fed the reference evaluator's inputs (relative error {dev.rel_err:.3g})")
    loc.first_node, loc.first_node_op = dev.node, dev.op_type


def judged_error(case: Case, patch: Any, model: Any) -> Eval:
    """``ort_error`` of ``model`` (``case`` patched by ``patch``) at the tolerance the patch is judged at (``judged``).
    A spec that widens it with a ``gain`` (an opmath ``per_op`` rounding: torch's float32 kernel and the file's
    lowering of one op differ in their last bits, which can flip a float16 rounding, a ``rsqrt`` exported as
    ``Div(1, Sqrt)``) passes at the wider tolerance only where the patch removed at least ``gain`` times what it
    leaves: the rest is a rounding's size next to the error it removed, not another mechanism left standing."""
    after = ort_error(judged(case, patch), model)
    gain = float((getattr(patch, "spec", None) or {}).get("gain") or 0.0)
    if not gain or after.fails or not after.ok or not ort_error(case, model).fails:
        return after
    before = ort_error(case)
    if before.max_abs >= gain * after.max_abs:
        return dataclasses.replace(after, widened=True)
    return Eval(after.max_abs, True, True, f"leaves {after.text()}, within the {patch.spec.get('rtol'):.2g} rounding "
                f"budget but not {gain:g} times below the origin's own error {before.text()}", n_out=after.n_out)
