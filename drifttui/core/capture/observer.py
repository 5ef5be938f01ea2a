"""The observer effect: does marking values as graph outputs change what ONNX Runtime computes?

drifttui reads intermediate values by adding them as graph outputs.  That can change ORT's
numbers: a value that is an output must be materialised, so ORT cannot fuse across it or
drop the rounding at it (with float16 nodes ORT's CPU provider computes in float32 between
Casts and removes back-to-back Cast pairs, unless the value between them is an output).
The deployed graph then computes something the instrumented one does not.

On sample 0 the instrumented session's model outputs are compared with a plain session's,
bit for bit (one extra session and run).  When they differ, the marked set is bisected to
name the values whose marking changes the numbers; the session then compares those values'
calls in a window of their own, so every other value, and the model outputs, are read from
a graph whose outputs equal the deployed one's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.prepare.stage import Prepared
from drifttui.core.prepare.windows import Window, attach_local
from drifttui.core.result import Config, ObserverCheck
from drifttui.core.runtime import sessions

MAX_SESSIONS = 40   # bisection budget (sessions built); over it the undecided values are all named

RunMarked = Callable[[list[str]], dict[str, np.ndarray]]   # marked values -> model outputs on sample 0


@dataclass
class Effect:
    identical: bool
    max_abs: float = 0.0
    values: list[str] = field(default_factory=list)     # values whose marking changes the outputs
    exhaustive: bool = True                             # False: the bisection budget ran out
    deterministic: bool = True                          # False: two plain runs differ already
    after_split: Optional[bool] = None                  # outputs identical once ``values`` are unmarked


def _differ(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """0.0 when bit for bit equal, else the largest |a - b| (inf for NaN / shape changes)."""
    worst = 0.0
    for k, x in a.items():
        y = b.get(k)
        if y is None or x.shape != y.shape or x.dtype != y.dtype:
            return float("inf")
        if x.tobytes() != y.tobytes():
            with np.errstate(all="ignore"):
                d = np.abs(x.astype(np.float64) - y.astype(np.float64)) if x.dtype.kind in "fiub" else None
            finite = d[~np.isnan(d)] if d is not None else None     # all NaN: no numpy warning, a difference
            m = float(finite.max()) if finite is not None and finite.size else float("inf")
            worst = max(worst, m if m > 0 else float("inf"))   # NaN bits / -0.0: a difference all the same
    return worst


def find_marked_effect(marked: list[str], instrumented: dict[str, np.ndarray],
                       run_marked: RunMarked) -> Effect:
    """Compare ``instrumented`` (outputs with every value in ``marked`` marked) with a plain run."""
    plain = run_marked([])
    diff = _differ(plain, instrumented)
    if diff == 0.0:
        return Effect(True)
    if _differ(plain, run_marked([])) != 0.0:
        return Effect(False, diff, deterministic=False)
    budget = [MAX_SESSIONS]

    def changes(subset: list[str]) -> bool:
        budget[0] -= 1
        return _differ(plain, run_marked(subset)) != 0.0

    def bisect(subset: list[str], known: bool) -> list[str]:
        if not known and not changes(subset):
            return []
        if len(subset) == 1 or budget[0] <= 0:
            return subset
        half = len(subset) // 2
        left = bisect(subset[:half], False)
        right = bisect(subset[half:], False)
        return (left + right) or subset      # neither half alone: only together (named as a set)

    culprits = bisect(list(marked), True)
    rest = [v for v in marked if v not in set(culprits)]
    after = _differ(plain, run_marked(rest)) == 0.0 if rest else True
    return Effect(False, diff, culprits, exhaustive=budget[0] > 0, after_split=after)


def summarise(f: Effect, owners: dict[str, list[str]], layers: list[int], opt_level: str) -> ObserverCheck:
    """The Result field and its one-paragraph note."""
    if f.identical:
        return ObserverCheck(checked=True, identical=True, note="")
    if not f.deterministic:
        note = ("observer check inconclusive: two plain ONNX Runtime runs of sample 0 differ already "
                "(the runtime is not bit-for-bit deterministic here; try --deterministic)")
        return ObserverCheck(checked=True, identical=False, max_abs=f.max_abs, note=note)
    named = ", ".join(f"{v} ({', '.join(owners.get(v, [])[:2]) or 'no module'})" for v in f.values[:6])
    more = f" and {len(f.values) - 6} more" if len(f.values) > 6 else ""
    note = (f"observer effect: marking intermediate values as ONNX outputs changes ONNX Runtime's model outputs "
            f"on sample 0 by up to {f.max_abs:.3g} (ORT level {opt_level}); the values whose marking does it: "
            f"{named}{more}. Their modules are compared in a separate window; the other values and the model "
            "outputs come from a graph that computes what the deployed one does")
    if f.after_split is False:
        note += " (not exactly: with those values unmarked the outputs still differ)"
    if not f.exhaustive:
        note += " (the bisection stopped at its budget: the named set may be larger than needed)"
    return ObserverCheck(checked=True, identical=False, max_abs=f.max_abs, values=list(f.values),
                         layers=sorted(layers), note=note)


def owners_of(plan: Plan, values: list[str]) -> list[int]:
    """Calls paired with any of ``values`` (a container sharing its child's value included)."""
    wanted = set(values)
    return [cm.call for cm in plan.calls if wanted & set(cm.outputs.values())]


def split_windows(windows: list[Window], culprits: list[str], plan: Plan) -> list[Window]:
    """Move the calls paired with ``culprits`` out of every window into one window of their own."""
    moved = set(owners_of(plan, culprits))
    if not moved:
        return windows
    out: list[Window] = []
    for w in windows:
        calls = w.calls - moved
        keep = {v for ci in calls for v in plan.calls[ci].outputs.values()}
        values = [v for v in w.values if v in keep and v not in set(culprits)]
        out.append(Window(w.first, w.last, calls, values, w.nbytes))
    values = list(dict.fromkeys(v for ci in sorted(moved) for v in plan.calls[ci].outputs.values()))
    out.append(Window(min(moved), max(moved), moved, values, 0))
    return out




def check(pr: "Prepared", cfg: "Config") -> tuple[list["Window"], ObserverCheck, Any, Optional[dict]]:
    """The capture stage's observer check on sample 0 at ``cfg``'s ORT level.

    Returns the windows to capture with (the calls whose marking changes the numbers moved to a
    window of their own; the Prepared's windows are never changed), the Result field, and, when
    they can be reused, window 0's instrumented session and every value it fetched on sample 0
    (sample 0's per-layer pass reads them instead of running that session again)."""
    if not pr.windows:
        return pr.windows, ObserverCheck(checked=False, identical=True), None, None
    outs = list(pr.index.graph_outputs)
    feeds0 = pr.feeds(pr.source(cfg.seed, cfg.zero_input).sample(0))

    def session(values: list[str]) -> Any:
        return sessions.make_session(pr.proto, cfg.opt_level, cfg.deterministic, cfg.provider, pr.workdir,
                                     "observer.onnx", extra_outputs=values, data_dir=pr.index.data_dir,
                                     prepack=False, types=pr.index.elem_types)

    def run_marked(values: list[str]) -> dict[str, np.ndarray]:
        return sessions.run(session(values), feeds0, outs)

    marked = [v for v in pr.windows[0].values if v not in set(outs)]
    if not marked:
        return pr.windows, ObserverCheck(checked=False, identical=True), None, None
    main = session(pr.windows[0].values)
    values0 = sessions.run(main, feeds0, list(dict.fromkeys(outs + pr.windows[0].values)))
    effect = find_marked_effect(marked, {k: values0[k] for k in outs if k in values0}, run_marked)
    moved = owners_of(pr.plan, effect.values)
    owners = {v: [pr.calls[ci].module or "(root)" for ci in owners_of(pr.plan, [v])] for v in effect.values}
    summary = summarise(effect, owners, moved, cfg.opt_level)
    if not moved:
        return pr.windows, summary, main, values0
    windows = split_windows(pr.windows, effect.values, pr.plan)
    attach_local(windows, pr.local, pr.plan)
    return windows, summary, None, None
