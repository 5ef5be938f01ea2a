"""Stage 3, ``decide(prepared, capture, config) -> Result``: statuses, origin, notes, coverage, fails.

The only place a tolerance is applied to the captured statistics, and the only writer of
``Layer.status`` and ``Layer.fails``.  Everything it reads is tolerance-free (``core/capture/stage.py``),
so re-deciding a Capture at another tolerance is exactly a fresh run at that tolerance.

A mapped call whose output is within the tolerance is ``ok``.  One that fails is ``drift``
when its *own* (local) error fails too, and ``inherited`` when its own nodes, fed with the
PyTorch-side inputs, agree with PyTorch.  The origin is the drifting call whose failing
value is computed first in the graph's execution order.  Local errors are attributed to
the deepest call that owns a value, so a container is never the origin when a child
explains the drift; a container is the origin only when its own ops (between its
children) drift.  A call whose weight a processed file packs with others (an Attention's QKV)
drifts when that block is not the model's, even with no value of its own in the file.
"""
from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional


from drifttui.core.runtime.cpu import detect
from drifttui.core.runtime.torch_hooks import Call
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.base.aggregate import Aggregate
from drifttui.core.base.metrics import Stats
from drifttui.core.base.tolerance import DTYPE_RULE, bound
from drifttui.core.decide.rules import Rules
from drifttui.core.decide.units import split_units, unit_note
from drifttui.core.decide.unattributed import attribute_unowned, unmapped_before
from drifttui.core.decide.notes import output_notes
from drifttui.core.decide.integer_steps import integer_steps, step_note
from drifttui.core.decide.genuine import genuine_drifts, unreduced_drift
from drifttui.core.decide.precision import computes_int8, precision_of
from drifttui.core.decide.origin import make_origin, over_budget, rounding_explained, worst_failing
from drifttui.core.result import (CHANNELS_AROUND, OWN_VALUES, DRIFT, FAIL_COLUMNS, FUSED, INHERITED, NOT_EXPORTED, OK,
                                  SCHEMA_VERSION,
                                  UNATTRIBUTED, UNMAPPED,
                                  Channels, Config, Coverage, Environment, InitializerInfo, Layer, LayerBudget, NodeInfo,
                                  Output, ParamInfo, Result, Tolerance)

if TYPE_CHECKING:   # pragma: no cover
    from drifttui.core.capture.stage import Capture
    from drifttui.core.prepare.stage import Prepared


@dataclass
class Verdict:
    statuses: list[str]
    origin: Optional[int]
    notes: list[str] = field(default_factory=list)
    precision_origin: Optional[int] = None      # a reduced file: the first layer over its precision budget,
                                                # when the origin is a genuine drift (both stories)
    genuine: list[int] = field(default_factory=list)   # the drifting calls no precision explains
    origin_notes: list[str] = field(default_factory=list)   # about the origin: said only while it is one


def decide(pr: "Prepared", cap: "Capture", cfg: Config, timings: Optional[dict[str, float]] = None,
           partial: bool = False) -> Result:
    """The Result of ``cap`` at ``cfg``'s tolerance (``cfg`` also fills Result.config).  In a
    reduced-precision file each layer is held to ``max(rtol, its precision budget)`` instead
    (tolerance.BUDGET_RULE, budgets from prepare): its own error to its own nodes' budget, its
    output to the budget of every reduced node computed before it.  A ``partial`` result (during
    capture) does not wait for the initializers' figures (prepare.details)."""
    atol, rtol = cfg.atol, cfg.rtol
    rules = Rules(rtol, *(pr.budgets or ({}, 0.0)), shares=dict(getattr(cap, "shares", {}) or {}),
                  rounding=dict(getattr(cap, "rounding", {}) or {}))
    first = local_first(cap.local_values, atol, rtol, rules)
    verdict = statuses_of(pr.calls, pr.plan, cap.glob, cap.local, first, cap.local_available, atol, rtol,
                          op_types=pr.details.op_types, rules=rules, stepped=integer_steps(cap.local_values, atol))
    layers = make_layers(pr.calls, pr.plan, verdict.statuses, cap.glob, cap.local, *pr.details.joined(wait=not partial), atol=atol, rtol=rtol,
                         extra_notes=_layer_notes(verdict.statuses, cap, pr.plan, atol, rules), rules=rules,
                         channels_for=around(verdict.origin))
    outputs = _outputs(pr, cap, atol, rules)
    out_fail = any(a.fails(atol, rules.outputs) for a in cap.outputs if a.samples)
    origin = verdict.origin
    note, diff, scale = cap.torch_self
    random_torch = bool(note) and not diff <= bound(atol, rtol, scale)
    if random_torch:                # torch differs from itself: no origin is the export's, nor what was said of it
        origin = None
    notes = [note] * random_torch + output_notes(outputs) + (verdict.origin_notes if origin is not None else []) \
        + list(verdict.notes)
    notes += _run_notes(pr, cap, cfg, verdict, out_fail, rules)
    drifts = verdict.origin is not None or out_fail
    return Result(
        schema_version=SCHEMA_VERSION,
        verdict="drift" if drifts else "ok",
        precision=precision_of(pr, rules, drifts, origin, over_budget(layers, origin),
                               any(L.status == DRIFT and L.index != origin for L in layers),
                               origin is not None and origin in verdict.genuine, rounding_explained(layers, origin)),
        drift_origin=make_origin(layers, origin, worst_failing(cap, layers, origin, atol, rules)),
        precision_origin=make_origin(layers, verdict.precision_origin if origin is not None else None),
        tolerance=Tolerance(atol, rtol, dtype=DTYPE_RULE),
        samples=cap.samples,
        layers=layers,
        outputs=outputs,
        coverage=coverage(verdict.statuses, pr.plan),
        environment=environment(cfg, pr, cap.output_level),
        config=cfg,
        timings={k: round(v, 4) for k, v in (timings if timings is not None else cap.timings).items()},
        notes=notes,
        windows=[[w.first, w.last] for w in cap.windows],
        observer=cap.observer,
    )


def _outputs(pr: "Prepared", cap: "Capture", atol: float, rules: "Rules") -> list[Output]:
    """One Output per graph output the capture compared, decided at the outputs' rule."""
    outputs = []
    for k, name in enumerate(pr.index.graph_outputs):
        agg = cap.outputs[k] if k < len(cap.outputs) else None
        if agg is None or not agg.samples:
            continue
        shape = [d if isinstance(d, int) else -1 for d in pr.index.shapes.get(name, [])]
        good, rows = cap.top1[k]
        dtype, onnx_dtype = cap.output_dtypes[k] if k < len(cap.output_dtypes) else ("", "")
        outputs.append(Output(name, k, shape, agg.to_metrics(), good / rows if rows else None,
                              fails=agg.fails(atol, rules.outputs), dtype=dtype, onnx_dtype=onnx_dtype,
                              nan_samples=list(agg.nan_samples)))
    return outputs


def _run_notes(pr: "Prepared", cap: "Capture", cfg: Config, verdict: "Verdict", out_fail: bool,
               rules: "Rules") -> list[str]:
    """What the run could not do or what the verdict alone does not say (after the output notes)."""
    notes: list[str] = []
    if not pr.plan.localized:
        notes.append(f"per-layer localisation was not possible: {pr.plan.reason}; the verdict rests on "
                     "the model outputs")
    elif not cap.local_available:
        notes.append("local errors were not computed (the graph has control flow or untyped feeds)")
    if out_fail and verdict.origin is None and rules.budgets and cfg.output_opt_level != cfg.opt_level:
        notes.append(f"the model outputs are over their precision budget ({rules.outputs:.3g} of their scale) while "
                     f"every layer is within its own at ORT level {cfg.opt_level}: the output pass runs at level "
                     f"{cfg.output_opt_level}, where " + (
                         "ONNX Runtime's fused int8 kernels (QLinearConv, QLinearMatMul...) compute differently; on "
                         "x86 CPUs without VNNI the uint8 x int8 kernels can saturate: quantize with reduce_range=True "
                         "or per_channel=True, or compare at --output-opt-level disable"
                         if pr.precision is not None and computes_int8(pr.precision) else
                         "ONNX Runtime's graph optimisations change the numbers: step 3 of `drifttui diagnose` names "
                         "the pass; compare at --output-opt-level disable to confirm"))
    elif out_fail and verdict.origin is None and pr.plan.localized and UNATTRIBUTED not in verdict.statuses:
        notes.append("the outputs drift but no mapped module owns the error: the responsible nodes are "
                     "not tied to a module (see unmapped layers)")
    if cap.observer is not None and cap.observer.note:
        notes.append(cap.observer.note)
    notes.extend(cap.notes)
    return notes


UNOWNED_NOTE = "fails the tolerance, but no module owns the error (its own nodes agree, no earlier module fails)"
OBSERVED_NOTE = ("marking its ONNX value as an output changes ONNX Runtime's numbers (observer effect): it is "
                 "compared in a window of its own, with only its values marked")


def _layer_notes(statuses: list[str], cap: "Capture", plan: Optional[Plan] = None, atol: float = 0.0,
                 rules: Optional[Rules] = None) -> dict[int, list[str]]:
    """Notes a decision or a capture adds to a layer (the plan's own notes stay as they are)."""
    out: dict[int, list[str]] = {}
    for cm in (plan.calls if plan is not None and rules is not None else []):
        for w in evidence(cm, cap.glob.get(cm.call), cap.local.get(cm.call), atol, rules, (cap.glob, cap.local)):
            out.setdefault(cm.call, []).append(w.note(atol, rules.weight(cm.call, w)))
            for o in (getattr(w, "owners", ()) if statuses[cm.call] == DRIFT else ()):
                if statuses[o] != DRIFT:
                    out.setdefault(o, []).append(w.owner_note())
    for i, st in enumerate(statuses):
        if st == UNATTRIBUTED:
            out.setdefault(i, []).append(UNOWNED_NOTE)
    for i in (cap.observer.layers if cap.observer is not None else []):
        out.setdefault(i, []).append(OBSERVED_NOTE)
    return out


def evidence(cm: Any, g: Optional[Aggregate], lo: Optional[Aggregate], atol: float, rules: Rules,
             aggs: Optional[tuple[dict, dict]] = None) -> list:
    """A call's failing checks by content: a weight that is not the model's; an attribute that is not the
    module's when the call's numbers show it at the float32 tolerance (its own error or its output: a
    looser tolerance that the numbers pass passes the attribute too, as a fresh run would); a module with no
    value of its own whose export alone differs (prepare/unit_members.py), when the numbers of the unit's
    compared calls (``aggs``: glob, local by call) fail."""
    def shown(floor: bool, of: tuple = (lo, g)) -> bool:
        return any(a is not None and a.samples and a.fails(atol, rules.rtol, floor) for a in of)

    def numbers(w: Any) -> bool:
        owners = getattr(w, "owners", None)
        if owners is None:
            return shown(getattr(w, "floor", True))
        glob, local = aggs if aggs is not None else ({}, {})
        return any(shown(True, (local.get(o), glob.get(o))) for o in owners)
    return [w for w in cm.weights if w.fails(atol, rules.weight(cm.call, w))
            and (not getattr(w, "needs_numbers", False) or numbers(w))]


def local_first(values: dict[int, list[tuple[int, Stats]]], atol: float, rtol: float,
                rules: Optional[Rules] = None) -> dict[int, int]:
    """Per owner: the first node (execution order) of a local value that fails the tolerance."""
    out: dict[int, int] = {}
    for owner, rows in values.items():
        failing = [first for first, st in rows
                   if (rules.own_fails(owner, st, atol) if rules is not None else st.fails_at(atol, rtol))]
        if failing:
            out[owner] = min(failing)
    return out


def _by_steps(statuses: list[str], stepped: dict[int, int]) -> dict[int, int]:
    """With no call drifting on its budget, the failing calls whose own integers step drift (mutates ``statuses``);
    returns them with their first stepping node."""
    if DRIFT in statuses:
        return {}
    out = {i: node for i, node in stepped.items() if i < len(statuses) and statuses[i] == INHERITED}
    for i in out:
        statuses[i] = DRIFT
    return out


NO_LOCAL_NOTE = ("local errors were not computed; the origin is the first module to finish with a failing output, "
                 "which can be an amplifier rather than the cause")


def _earliest_only(calls: list[Call], statuses: list[str], drifting: list[int]) -> list[int]:
    """Without local errors: the earliest-finishing failing call is the origin, the rest inherit."""
    first = min(drifting, key=lambda i: calls[i].end_order)
    for i in drifting:
        if i != first:
            statuses[i] = INHERITED
    return [first]


def statuses_of(calls: list[Call], plan: Plan, glob: dict[int, Aggregate], local: dict[int, Aggregate],
                local_first: dict[int, int], local_available: bool, atol: float, rtol: float,
                op_types: Optional[dict[int, list[str]]] = None, rules: Optional[Rules] = None,
                stepped: Optional[dict[int, int]] = None) -> Verdict:
    """Each call's status and the drift origin.  ``stepped``: the calls whose own integer values differ from torch's
    by a whole step (decide/integer_steps.py), the origin's candidates where no call drifts on its budget."""
    rules = rules if rules is not None else Rules(rtol)
    statuses: list[str] = []
    by_weight: dict[int, int] = {}      # call -> the first node reading a weight that is not the model's
    units: dict[int, set[int]] = {}     # a module with no value whose own export differs -> its unit's calls
    for cm in plan.calls:
        bad = evidence(cm, glob.get(cm.call), local.get(cm.call), atol, rules, (glob, local))   # not the model's
        if bad:
            by_weight[cm.call] = min(w.node for w in bad)
            owners = {o for w in bad for o in getattr(w, "owners", ())}
            units.update({cm.call: owners} if owners else {})
            statuses.append(DRIFT)
            continue
        if cm.status != OK:
            statuses.append(cm.status)
            continue
        agg = glob.get(cm.call)
        if agg is None or agg.samples == 0:
            statuses.append(UNMAPPED)
            continue
        own = local.get(cm.call)
        if not agg.fails(atol, rules.out(cm.call)):
            # either test: a layer with reduced nodes of its own fails on its own budget alone, and
            # one with none of its own on the float32 tolerance (genuine.unreduced_drift)
            alone = rules.judged_alone(cm.call) and own is not None and own.samples \
                and rules.own_fails(cm.call, own, atol)
            statuses.append(DRIFT if alone or unreduced_drift(cm.call, own, atol, rules) else OK)
            continue
        if own is not None and own.samples:
            statuses.append(DRIFT if rules.own_fails(cm.call, own, atol) else INHERITED)
        elif local_available:
            statuses.append(INHERITED)   # no own computation: its output is a child's or an input
        else:
            statuses.append(DRIFT)       # refined below: only the first failing leaf-most call
    by_steps = _by_steps(statuses, stepped or {})
    local_first = {**by_steps, **local_first}
    split_units(calls, units, statuses, by_weight)
    notes: list[str] = []
    drifting = [i for i, s in enumerate(statuses) if s == DRIFT]
    if not local_available and drifting:
        drifting = _earliest_only(calls, statuses, drifting)
        notes.append(NO_LOCAL_NOTE)
    # a node two calls share (ORT fused a Conv into its activation's node): the call whose constant the
    # evidence by content says is wrong comes first
    first = lambda i: (local_first.get(i, by_weight.get(i, 10**9)), i not in by_weight,  # noqa: E731
                       calls[i].end_order, -calls[i].depth)
    genuine = genuine_drifts(drifting, by_weight, rules)
    origin = min(genuine or drifting, key=first) if drifting else None
    rest = [i for i in drifting if i not in genuine]
    precision_origin = min(rest, key=first) if genuine and rest else None
    origin_notes = [unit_note(calls, plan, origin, atol, rules)] if origin in units else []
    origin_notes += [step_note(calls[origin].module)] if origin in by_steps else []
    notes.extend(attribute_unowned(calls, plan, statuses, origin, op_types))
    notes.extend(unmapped_before(calls, statuses, origin))
    return Verdict(statuses, origin, notes, precision_origin, genuine, origin_notes)


def coverage(statuses: list[str], plan: Plan) -> Coverage:
    mapped = sum(1 for s in statuses if s in (OK, DRIFT, INHERITED, UNATTRIBUTED))
    return Coverage(
        modules=len(statuses), mapped=mapped,
        fused=statuses.count(FUSED), not_exported=statuses.count(NOT_EXPORTED),
        unmapped=statuses.count(UNMAPPED), localized=plan.localized, reason=plan.reason,
    )


def fails_of(g: Optional[Aggregate], lo: Optional[Aggregate], atol: float, rtol: float,
             own_rtol: Optional[float] = None, measured: bool = False) -> dict[str, bool]:
    """Per FAIL_COLUMNS: max_abs and max_rel fail when the output fails the tolerance rule in a sample
    (they are two views of the one rule); local when the own error does; cos when, in a failing
    sample, 1 - cosine exceeds rtol (the output's direction changed, not only its size)."""
    bad = g.failing(atol, rtol) if g is not None and g.samples else []
    out = dict.fromkeys(FAIL_COLUMNS, False)
    out["max_abs"] = out["max_rel"] = bool(bad)
    out["cos"] = any(not 1.0 - g.cosine[k] <= rtol for k in bad) if g is not None else False   # NaN fails
    own_rtol = rtol if own_rtol is None else own_rtol
    out["local"] = bool(lo is not None and lo.samples and lo.fails(atol, own_rtol, not measured))
    return out


def around(origin: Optional[int]) -> set[int]:
    """The layers whose per-channel errors a Result carries: the origin and its neighbours."""
    if origin is None:
        return set()
    return set(range(origin - CHANNELS_AROUND, origin + CHANNELS_AROUND + 1))


def make_layers(calls: list[Call], plan: Plan, statuses: list[str], glob: dict[int, Aggregate],
                local: dict[int, Aggregate], details: dict[int, tuple[list[NodeInfo], list[InitializerInfo]]],
                op_types: dict[int, list[str]], node_names: dict[int, list[str]], atol: float = 0.0,
                rtol: float = 0.0, extra_notes: Optional[dict[int, list[str]]] = None,
                rules: Optional[Rules] = None, channels_for: Optional[set[int]] = None) -> list[Layer]:
    rules = rules if rules is not None else Rules(rtol)
    layers = []
    extra_notes = extra_notes or {}
    for c, cm, st in zip(calls, plan.calls, statuses):
        g = glob.get(c.index)
        lo = local.get(c.index)
        nodes, inits = details.get(c.index, ([], []))
        layers.append(Layer(
            index=c.index, module=c.module, cls=c.cls, call=c.call, depth=c.depth, parent=c.parent,
            status=st,
            onnx_values=[cm.outputs[p] for p in sorted(cm.outputs)],
            op_types=op_types.get(c.index, []),
            onnx_nodes=node_names.get(c.index, []),
            output_shapes=[list(o.shape) for o in c.outputs],
            metrics=g.to_metrics() if g is not None and g.samples else None,
            local=lo.to_metrics() if lo is not None and lo.samples else None,
            note="; ".join([n for n in [cm.note, *extra_notes.get(c.index, [])] if n]),
            nodes=nodes, initializers=inits,
            params=[ParamInfo(n, k, list(s), d) for n, k, s, d in c.params],
            fails=fails_of(g, lo, atol, rules.out(c.index), rules.own(c.index), rules.measured(c.index)),
            budget=layer_budget(rules, c.index, g, lo, atol),
            channels=layer_channels(c, cm, g, lo) if channels_for and c.index in channels_for else None,
        ))
    return layers


def layer_channels(c: Call, cm: Any, g: Optional[Aggregate], lo: Optional[Aggregate]) -> Optional[Channels]:
    """A layer's per-channel errors: of its output; for the root with ONNX nodes of its own, of
    those nodes' values fed from torch (its own error: the root's output is the model's output,
    which says nothing of where in the root's own code the error starts)."""
    if c.parent is None and cm.own and lo is not None:
        own = lo.to_channels(source=OWN_VALUES)
        if own is not None:
            return own
    return g.to_channels() if g is not None else None


def layer_budget(rules: Rules, call: int, g: Optional[Aggregate], lo: Optional[Aggregate],
                 atol: float) -> Optional[LayerBudget]:
    """The budget columns of a layer of a reduced-precision file (None for float32 files)."""
    b = rules.budgets.get(call)
    if b is None:
        return None
    own_db = min(lo.sqnr) if lo is not None and lo.sqnr else None
    out_db = min(g.sqnr) if g is not None and g.sqnr else None
    over = bool(lo is not None and lo.samples and b.own > 0 and rules.own_fails(call, lo, atol))
    measured = rules.rounding.get(call)
    own = rules.own_budget(call)
    return LayerBudget(b.fmt, own, b.out, b.depth, own_db, out_db, rules.shares.get(call), over,
                       own_bound=b.own, measured=measured,
                       derived="measured" if rules.measured(call) else "bound",
                       rounding_explains=bool(b.run_ids) and rules.rounding_explains(call, lo, atol))


def environment(cfg: Config, pr: "Prepared", output_level: str = "") -> Environment:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch

    index = pr.index
    cpu = detect()
    return Environment(
        torch=torch.__version__, onnx=onnx.__version__, onnxruntime=ort.__version__,
        numpy=np.__version__, python=platform.python_version(), opset=index.opset,
        producer=index.producer_name, exporter=pr.exporter, ort_opt_level=cfg.opt_level,
        threads=1 if cfg.deterministic else 0, deterministic=cfg.deterministic, provider=cfg.provider,
        ort_output_opt_level=output_level or cfg.output_opt_level, cpu=cpu.summary(), int8_kernel=cpu.key(),
    )
