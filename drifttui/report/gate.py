"""The CI gate: the ONE place that turns a Result into an exit code.

``decide(result, Gate(fail_on, min_top1, baseline))`` returns a :class:`Decision`: the exit
code, why the gate fails (one line each) and, with a baseline, what changed. The CLI, the
JUnit/Markdown reports and ``drifttui.assert_no_drift`` all use it (docs/ci.md, docs/cli.md).

- ``fail_on="drift"`` (default): fail when the export drifts.
- ``fail_on="error"``: also fail on an error-severity finding (``diagnose``), e.g. a stale
  initializer whose outputs still agree.
- ``fail_on="never"``: report only.
- ``min_top1``: fail when a classifier output's top-1 agreement is below it, whatever
  ``fail_on`` says; a gate that cannot apply (no classifier output) exits 2, never passes silently.
- ``baseline``: fail only on a new or worse drift (or a new error finding) than the baseline's;
  a baseline of another run (model, inputs, graph: report/baseline.py) is exit 2, never a pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from drifttui.core.result import DRIFT, Finding, Result
from drifttui.errors import EXIT_DRIFT, EXIT_OK, EXIT_USAGE, InputError, InvalidArgument
from drifttui.report.baseline import bad_figure
from drifttui.report.baseline import mismatch as baseline_mismatch
from drifttui.report.summary import fmt, layer_name, origin_name, origin_text, output_fails

FAIL_ON = ("drift", "error", "never")
# a known drift counts as worse when its max |d| grows by more than this fraction
WORSE_MARGIN = 0.10


@dataclass(frozen=True)
class Gate:
    fail_on: str = "drift"
    min_top1: Optional[float] = None
    baseline: Optional[Result] = None

    def __post_init__(self) -> None:
        if self.fail_on not in FAIL_ON:
            raise InvalidArgument(f"fail_on={self.fail_on!r} is not known", f"use one of {', '.join(FAIL_ON)}")
        top1 = self.min_top1
        if top1 is not None and (isinstance(top1, bool) or not isinstance(top1, (int, float))
                                 or not 0.0 <= top1 <= 1.0):     # NaN fails the range too
            raise InvalidArgument(f"min_top1={top1!r:.40} is not between 0 and 1", "give a fraction such as 0.997")
        if self.baseline is not None:
            problem = baseline_problem(self.baseline)
            if problem:
                raise InputError(problem, BASELINE_FIX)


BASELINE_FIX = "give the report drifttui check --json wrote for this run, unedited, or drop --baseline"


def baseline_problem(base: Result) -> str:
    """Why ``base`` cannot be a baseline at all ("" when it can): not a Result, or a figure the gate
    compares that is NaN, Infinity, negative or not a number (a NaN made every comparison false)."""
    if not isinstance(base, Result):
        return f"--baseline is a {type(base).__name__}, not a drifttui report"
    problem = bad_figure(base)
    return f"--baseline has an unusable figure: {problem}" if problem else ""


@dataclass(frozen=True)
class Decision:
    exit_code: int
    failures: list[str] = field(default_factory=list)   # why the gate fails, one line each
    changes: list[str] = field(default_factory=list)    # with a baseline: what changed
    tolerated: bool = False     # the run drifts, but the baseline carries the same drift
    usage: str = ""             # a gate that could not apply (exit 2 when nothing else fails)
    findings: list[Finding] = field(default_factory=list)   # the error findings that fail the gate

    @property
    def passed(self) -> bool:
        return self.exit_code == EXIT_OK


def decide(result: Result, gate: Gate = Gate()) -> Decision:
    failures: list[str] = []
    changes: list[str] = []
    tolerated = False
    base = gate.baseline
    drift = result.verdict == "drift"
    if base is not None:
        problem = baseline_problem(base)
        if problem:             # a NaN figure would make every "worse" comparison false: never a pass
            return Decision(EXIT_USAGE, usage=f"{problem}; {BASELINE_FIX}")
        other = baseline_mismatch(result, base)
        if other:               # a baseline of another run would carry the wrong drift: never a pass
            return Decision(EXIT_USAGE, usage=f"--baseline is not a report of this run: {other}; "
                                              "give the baseline written by this model, inputs and ONNX graph "
                                              "(drifttui check ... --json), or drop --baseline")
        new, changes = compare_baseline(result, base)
        tolerated = drift and not new
        if gate.fail_on != "never":
            failures += new
    elif drift and gate.fail_on != "never":
        failures.append(f"drift: origin {origin_text(result)}")
    failing: list[Finding] = []
    if gate.fail_on == "error":
        known = {_finding_key(f) for f in base.findings} if base is not None else set()
        for f in error_findings(result):
            if _finding_key(f) not in known:
                failing.append(f)
                failures.append(f"error finding: {f.check}{f' at {f.module}' if f.module else ''}: {f.message}")
    if gate.fail_on != "never":
        failures += served_failures(result)
    usage = ""
    if gate.min_top1 is not None:
        rated = [o for o in result.outputs if o.top1_agreement is not None]
        if not rated:
            usage = ("--min-top1 needs a classifier output ([batch, classes]) and none of the outputs is one; "
                     "drop --min-top1 for this model")
        for o in rated:
            if not o.top1_agreement >= gate.min_top1:     # type: ignore[operator]  # NaN is below
                failures.append(f"top-1 agreement of output {o.name} is {100 * o.top1_agreement:.2f}% over "  # type: ignore[operator]
                                f"{result.samples} sample(s), below --min-top1 {gate.min_top1:g}")
    code = EXIT_DRIFT if failures else (EXIT_USAGE if usage else EXIT_OK)
    return Decision(code, failures, changes, tolerated, usage, failing)


def worse(now: float, then: float) -> bool:
    """Whether max |d| ``now`` is worse than the baseline's ``then``: written so that a NaN is never
    within (``not now <= ...``), except an origin neither run measured (no metrics: both NaN)."""
    if now != now and then != then:
        return False
    return not now <= then * (1 + WORSE_MARGIN)


def served_failures(result: Result) -> list[str]:
    """A served model that differs from its file, and a batch sweep that finds a batch dependence
    (a dynamic batcher is only safe when it passes): each fails the gate like a drift."""
    out = []
    s, b = result.served, result.batch_sweep
    if s is not None and s.verdict == "differs":
        out.append(f"served: {s.model} differs from the file's local run: {s.reason}")
    if b is not None and not b.invariant:
        where = f" from layer #{b.first_layer} {b.first_module or '(root)'}" if b.first_layer is not None else ""
        out.append(f"batch sweep {b.sizes}: the outputs depend on the batch{where}")
    return out


def error_findings(result: Result) -> list[Finding]:
    return [f for f in result.findings if f.severity == "error"]


def _finding_key(f: Finding) -> tuple[str, Optional[str]]:
    return f.check, f.module


def _drift_layers(result: Result) -> dict[tuple[str, int], float]:
    return {(L.module, L.call): (L.metrics.max_abs.worst if L.metrics else 0.0)
            for L in result.layers if L.status == DRIFT}


def compare_baseline(result: Result, base: Result) -> tuple[list[str], list[str]]:
    """(new or worse drift, one line each; every change, for the summary)."""
    new: list[str] = []
    changes: list[str] = []
    o, b = result.drift_origin, base.drift_origin
    key = (o.module, o.call) if o is not None else None
    bkey = (b.module, b.call) if b is not None else None
    if result.verdict == "drift" and base.verdict != "drift":
        new.append(f"new drift (the baseline has none): origin {origin_text(result)}")
    elif result.verdict == "drift" and key != bkey:
        new.append(f"new drift origin {origin_name(result)} (the baseline's: {origin_name(base)})")
    elif o is not None and b is not None and worse(o.max_abs, b.max_abs):
        new.append(f"worse drift at {origin_name(result)}: max |d| {fmt(o.max_abs)} "
                   f"(baseline {fmt(b.max_abs)})")
    elif result.verdict == "drift":
        changes.append(f"known drift at {origin_name(result)} is unchanged: max |d| {fmt(o.max_abs if o else None)} "
                       f"(baseline {fmt(b.max_abs if b else None)})")
    if base.verdict == "drift" and result.verdict != "drift":
        changes.append(f"the baseline's drift at {origin_name(base)} is gone")
    elif b is not None and key == bkey and o is not None and o.max_abs < b.max_abs / (1 + WORSE_MARGIN):
        changes.append(f"the drift at {origin_name(result)} shrank: max |d| {fmt(o.max_abs)} (baseline {fmt(b.max_abs)})")
    if base.verdict == "drift" and key == bkey:
        extra = sorted(set(_drift_layers(result)) - set(_drift_layers(base)))
        if extra:
            new.append("new drifting layer(s) beside the known origin: "
                       + ", ".join(layer_name(m, c) for m, c in extra[:5]))
    new += _worse_outputs(result, base)
    for what, now, then in (("samples", result.samples, base.samples),
                            ("atol", result.tolerance.atol, base.tolerance.atol),
                            ("rtol", result.tolerance.rtol, base.tolerance.rtol)):
        if now != then:
            changes.append(f"{what} differs from the baseline's ({now:g} vs {then:g}): compare like with like")
    return new, new + changes


def _worse_outputs(result: Result, base: Result) -> list[str]:
    out = []
    old = {o.name: o for o in base.outputs}
    for o in result.outputs:
        b = old.get(o.name)
        if b is None or not output_fails(o):
            continue
        if not output_fails(b):
            out.append(f"output {o.name} now fails the tolerance (max |d| {fmt(o.metrics.max_abs.worst)})")
        elif worse(o.metrics.max_abs.worst, b.metrics.max_abs.worst):
            out.append(f"output {o.name} drifts more: max |d| {fmt(o.metrics.max_abs.worst)} "
                       f"(baseline {fmt(b.metrics.max_abs.worst)})")
        if o.top1_agreement is not None and b.top1_agreement is not None and \
                not o.top1_agreement >= b.top1_agreement:          # NaN: fell
            out.append(f"output {o.name} top-1 agreement fell to {100 * o.top1_agreement:.2f}% "
                       f"(baseline {100 * b.top1_agreement:.2f}%)")
    return out
