"""A module whose output has no ONNX value of its own, and that no view holds (issue 30 point 6): compared
with the call that absorbed it as one unit, and the member whose own torch computation differs is named.

The exporter's constant folding, its optimiser or ONNX Runtime's graph optimiser can fold a module's
computation into its neighbour's: a weight module's result folded with its consumer's own weight into one
constant (``F.linear(x, wt() * g + base)``), a ``Scale`` module's constant folded into the next MatMul's
``alpha`` (ORT's MatMulScaleFusion), a bias module's Add fused into the Linear's Gemm (MatMulAddFusion).
Then the module and the call that absorbed it have one ONNX value between them; when no view of a value
holds the module's output (``plan/absorbed.py``), that call's own error is the unit's, and the call, fed the
module's wrong values, was named the origin.

The unit is split by counterfactual: each member (a user-defined module with a computation of its own: nodes
or parameters, and no compared value) is exported alone by the exporter that made the file, on its own sample-0
arguments, and run in ONNX Runtime with no graph optimisation; its difference from torch's output is its own
computation's, measured here (tolerance-free, as ``plan.WeightCheck``).  decide fails the member, and passes the
call that absorbed it as fed the wrong values, only where that difference fails the tolerance and the unit's own
numbers fail too.  At most ``MAX_MEMBERS`` members are exported, in execution order.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import onnx

from drifttui.core.base.tolerance import bound
from drifttui.core.model.export import export_model
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import OK, display_name
from drifttui.core.runtime import sessions
from drifttui.core.runtime.guards import safe_forward
from drifttui.core.runtime.torch_hooks import Call, Hooks, Sink, tensors_of, to_numpy

MAX_MEMBERS = 8
_FLOAT = ("float", "bfloat", "half", "double")


@dataclass
class UnitCheck:
    """Call ``member`` (no ONNX value of its own) against its own export alone; ``owners``: the compared calls
    whose nodes compute it (the unit).  Decided like a weight compared by content (``decide.stage.evidence``)."""

    member: str          # the module
    owners: tuple[int, ...]
    owner_names: tuple[str, ...]
    exporter: str
    max_abs: float       # max |its export alone - torch| on sample 0 (inf: a non-finite element on one side)
    scale: float         # max |torch|
    node: int            # the unit's first node (execution order for the origin)
    needs_numbers: bool = True   # evidence only where the unit's own numbers fail (decide reads the owners')
    strict: bool = False

    def fails(self, atol: float, rtol: float) -> bool:
        return not self.max_abs <= bound(atol, rtol, self.scale)     # NaN / inf: never within

    def note(self, atol: float, rtol: float) -> str:
        owners = self.owner_names[0]
        return (f"its output has no ONNX value of its own and no view holds it: compared with {owners} as one unit "
                f"(whose nodes compute both); inside the unit, its own computation, exported alone by the "
                f"{self.exporter} exporter, differs from torch by max |d| {self.max_abs:.3g} (allowed "
                f"{bound(atol, rtol, self.scale):.3g}): the drift is here, {owners} was fed its values")

    def owner_note(self) -> str:
        return (f"compared with {self.member} as one unit ({self.member}'s output has no ONNX value of its own: "
                f"this call's nodes compute both); {self.member}'s own computation differs, this call was fed its "
                "values")


def _custom(model: Any, call: Call) -> bool:
    try:
        mod = model.get_submodule(call.module)
    except AttributeError:
        return False
    return type(mod).__module__.split(".")[0] != "torch"


def _compared(plan: Plan, ci: int) -> bool:
    cm = plan.calls[ci]
    return cm.status == OK and bool(cm.outputs)


def owners_of(calls: list[Call], plan: Plan, ci: int) -> tuple[int, ...]:
    """The compared calls whose nodes compute call ``ci``'s: the call it was folded into, the compared calls that
    read its output, and its nearest compared ancestor."""
    out: list[int] = []
    into = plan.calls[ci].folded_into
    if into is not None and _compared(plan, into):
        out.append(into)
    out += [c.index for c in calls if c.index not in out and _compared(plan, c.index)
            and any(r.producer is not None and r.producer[0] == ci for r in c.inputs)]
    p = calls[ci].parent
    while p is not None and not _compared(plan, p):
        p = calls[p].parent
    if p is not None and p not in out and p != 0:
        out.append(p)
    return tuple(out)


def members(calls: list[Call], plan: Plan, model: Any) -> dict[int, tuple[int, ...]]:
    """Call -> its owners, for the user-defined calls with a computation and no compared value, that a
    compared call computes (execution order, at most MAX_MEMBERS)."""
    out: dict[int, tuple[int, ...]] = {}
    for c in sorted(calls, key=lambda c: c.end_order):
        cm = plan.calls[c.index]
        if c.parent is None or _compared(plan, c.index) or not (cm.nodes or c.params) or not _custom(model, c):
            continue
        if not any(not r.passthrough and r.dtype.startswith(_FLOAT) for r in c.outputs):
            continue
        owners = owners_of(calls, plan, c.index)
        if owners:
            out[c.index] = owners
        if len(out) >= MAX_MEMBERS:
            break
    return out


class _Args(Sink):
    wants_inputs = False
    wants_calls = True

    def __init__(self, wanted: set[int]) -> None:
        self.wanted, self.got = wanted, {}

    def on_call(self, call: int, module: Any, args: tuple, kwargs: dict, outs: list) -> None:
        if call in self.wanted and call not in self.got:
            self.got[call] = (module, args, dict(kwargs), [to_numpy(t) for t in outs])


def _alone(module: Any, args: tuple, kwargs: dict, exporter: str, provider: str,
           workdir: Path) -> Optional[list[np.ndarray]]:
    """The module's outputs, exported alone and run in ONNX Runtime (no graph optimisation), or None."""
    path = export_model(module, args, kwargs, exporter, workdir)
    proto = onnx.load(str(path))
    sess = sessions.make_session(proto, "disable", False, provider, workdir, "alone.onnx")
    flat = [to_numpy(t) for t in tensors_of((args, kwargs))]
    names = [i.name for i in sess.get_inputs()]
    if len(names) != len(flat):
        return None
    return list(sess.run(None, dict(zip(names, flat))))


def _difference(onnx_outs: list[np.ndarray], torch_outs: list[np.ndarray]) -> Optional[tuple[float, float]]:
    pairs = [(np.asarray(o, dtype=np.float64), np.asarray(t, dtype=np.float64)) for o, t in zip(onnx_outs, torch_outs)
             if np.shape(o) == np.shape(t) and np.asarray(t).dtype.kind == "f"]
    if not pairs:
        return None
    diff, scale = 0.0, 0.0
    for o, t in pairs:
        if (np.isfinite(o) != np.isfinite(t)).any():
            diff = float("inf")
        both = np.isfinite(o) & np.isfinite(t)
        if both.any():
            diff = max(diff, float(np.abs(o[both] - t[both]).max()))
            scale = max(scale, float(np.abs(t[both]).max()))
    return diff, scale


def unit_checks(calls: list[Call], plan: Plan, model: Any, hooks: Optional[Hooks], sample0: Any,
                exporter: str, provider: str, timings: dict[str, float]) -> dict[int, UnitCheck]:
    """Call -> its UnitCheck, for every member (``members``) whose export alone ran."""
    if hooks is None or exporter not in ("dynamo", "torchscript"):
        return {}
    wanted = members(calls, plan, model)
    if not wanted:
        return {}
    t = time.perf_counter()
    sink = _Args(set(wanted))
    try:
        with hooks.installed():
            hooks.begin(sink)
            safe_forward(model, sample0)
    finally:
        hooks.begin(None)
    out: dict[int, UnitCheck] = {}
    for ci, owners in wanted.items():
        if ci not in sink.got:
            continue
        module, args, kwargs, torch_outs = sink.got[ci]
        try:
            with tempfile.TemporaryDirectory(prefix="drifttui-unit-") as tmp:
                got = _alone(module, args, kwargs, exporter, provider, Path(tmp))
        except Exception:  # noqa: BLE001 - a member that cannot be exported alone is not split (the unit stays)
            continue
        diff = _difference(got, torch_outs) if got is not None else None
        if diff is None:
            continue
        first = min((n for o in owners for n in (plan.calls[o].own or plan.calls[o].nodes)), default=0)
        out[ci] = UnitCheck(display_name(calls[ci].module), owners,
                            tuple(display_name(calls[o].module) for o in owners), exporter, diff[0], diff[1], first)
    timings["units"] = time.perf_counter() - t
    return out
