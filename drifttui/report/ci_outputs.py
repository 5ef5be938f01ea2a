"""The CI side of ``check`` / ``diagnose``: flags, checks before the run, outputs and exit code after.

``add_options(parser)`` adds ``--junit --markdown --gitlab --html --fail-on --min-top1 --baseline``.
``CiRun.prepare(args, inputs)`` runs before any work: every output path is checked (never a
folder, a missing or read-only folder, or one of the run's inputs, the baseline included) and
the baseline is read. ``CiRun.finish(result)`` decides the exit code (``gate.decide``), writes
the reports atomically, prints GitHub annotations under ``GITHUB_ACTIONS=true``, and says on
stderr why the gate failed.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import dataclass, field
from typing import Iterator

from drifttui.core.result import Result
from drifttui.report.gate import FAIL_ON, Decision, Gate, decide
from drifttui.report.escape import terminal, write_command
from drifttui.report.outputs import check_output, write_atomic

CI_HELP = """CI gate (docs/ci.md):
  --fail-on drift   exit 1 when the export drifts (default)
  --fail-on error   also exit 1 on an error-severity finding of the drift checks (check runs them
                    too), e.g. a stale initializer whose outputs still agree
  --fail-on never   report only
  --min-top1 F      exit 1 when a classifier output's top-1 agreement is below F, whatever --fail-on
                    says; exit 2 when no output is a classifier's ([rows, classes])
  --baseline FILE   exit 1 only on a new or worse drift than that earlier --json report's
"""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a fraction such as 0.997") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1; give a fraction such as 0.997")
    return value


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--junit", metavar="PATH", help="write a JUnit XML report (one suite, a case per output "
                   "and one for the per-layer verdict)")
    p.add_argument("--markdown", metavar="PATH", help="write a Markdown summary (for $GITHUB_STEP_SUMMARY "
                   "or a PR comment)")
    p.add_argument("--gitlab", metavar="PATH", help="write a GitLab code-quality JSON report")
    p.add_argument("--html", metavar="PATH", help="write one self-contained HTML page: the error profile plot, "
                   "the origin's drill-down, the steps and cause, every layer with heat (no network, no script)")
    p.add_argument("--fail-on", choices=FAIL_ON, default="drift",
                   help="what fails the run with exit 1: drift (default), error (drift or an error finding), never")
    p.add_argument("--min-top1", type=_fraction, default=None, metavar="FRACTION",
                   help="exit 1 when top-1 agreement of a classifier output is below FRACTION (0..1)")
    p.add_argument("--baseline", metavar="OLD.json",
                   help="an earlier --json report: fail only on a new or worse drift, and say what changed")


@dataclass
class CiRun:
    gate: Gate
    paths: dict[str, str] = field(default_factory=dict)     # flag -> output path
    command: str = "check"

    @classmethod
    def prepare(cls, args: argparse.Namespace, inputs: list[str], command: str = "check") -> "CiRun":
        from drifttui.errors import InputError

        baseline_path = getattr(args, "baseline", None)
        paths = {flag: getattr(args, flag[2:], None) for flag in ("--junit", "--markdown", "--gitlab", "--html")}
        paths = {flag: path for flag, path in paths.items() if path}
        inputs = list(inputs) + ([baseline_path] if baseline_path else [])
        for flag, path in paths.items():
            if path == "-":
                raise InputError(f"{flag} - is not supported", f"give {flag} a file path")
            check_output(path, flag, inputs)
        named = list(paths.values()) + ([args.json] if getattr(args, "json", None) not in (None, "-") else [])
        if len(set(named)) < len(named):
            raise InputError("two report flags name the same file",
                             "give --json, --junit, --markdown, --gitlab and --html distinct paths")
        baseline = _read_baseline(baseline_path) if baseline_path else None
        gate = Gate(getattr(args, "fail_on", "drift"), getattr(args, "min_top1", None), baseline)
        return cls(gate, paths, command)

    def decide(self, result: Result) -> Decision:
        return decide(result, self.gate)

    def finish(self, result: Result, stdout_is_report: bool = False, decision: Decision | None = None,
               report_printed: bool = False) -> int:
        """``report_printed``: the text report on stdout already says the gate's outcome (its
        headline), so stderr only carries a gate that could not apply."""
        from drifttui.report import annotations, html, junit, markdown

        decision = decision or decide(result, self.gate)
        if "--html" in self.paths:
            write_atomic(self.paths["--html"], html.render(result, decision), "--html")
        if "--junit" in self.paths:
            write_atomic(self.paths["--junit"], junit.render(result, decision, self.gate, self.command), "--junit")
        if "--markdown" in self.paths:
            write_atomic(self.paths["--markdown"], markdown.render(result, decision, self.gate), "--markdown")
        if "--gitlab" in self.paths:
            write_atomic(self.paths["--gitlab"], annotations.gitlab(result, decision), "--gitlab")
        if annotations.in_github_actions():
            stream = sys.stderr if stdout_is_report else sys.stdout
            for line in annotations.github(result, decision):
                write_command(stream, line)
            stream.flush()
        _say(decision, self.gate, result, report_printed)
        return decision.exit_code


    @contextlib.contextmanager
    def errors_reported(self) -> Iterator[None]:
        """A run that raises a drifttui error (bad input: exit 2, model/runtime: exit 3) still
        writes complete reports saying so, then the error goes on to the one-line message."""
        from drifttui.errors import DriftTuiError

        from drifttui.errors import environment_failure

        try:
            yield
        except DriftTuiError as exc:
            self._report_error(exc)
            raise
        except Exception as exc:    # a full disk, a file-size limit...: exit 2, and the reports say so
            refused = environment_failure(exc)
            if refused is None:
                raise
            self._report_error(refused)
            raise refused from exc

    def _report_error(self, exc: Exception) -> None:
        from drifttui.report import annotations, html, junit, markdown

        writers = {"--html": lambda: html.render_error(exc, self.command),"--junit": lambda: junit.render_error(exc, self.command),
                   "--markdown": lambda: markdown.render_error(exc, self.command),
                   "--gitlab": lambda: annotations.gitlab_error(exc)}
        for flag, path in self.paths.items():
            try:
                write_atomic(path, writers[flag](), flag)
            except Exception:   # noqa: BLE001 - never hide the run's own error behind a report's
                pass
        if annotations.in_github_actions():
            write_command(sys.stdout, annotations.github_error(exc))
            sys.stdout.flush()


def _read_baseline(path: str) -> Result:
    from drifttui.errors import InputError
    from drifttui.report import json_report
    from drifttui.report.gate import BASELINE_FIX, baseline_problem

    base = json_report.read(path)
    problem = baseline_problem(base)
    if problem:
        raise InputError(problem.replace("--baseline", f"--baseline {path!r}", 1), BASELINE_FIX)
    return base


def _say(decision: Decision, gate: Gate, result: Result, report_printed: bool = False) -> None:
    """Why the gate fails, on stderr: all of it when stdout is the JSON report, only a gate that
    could not apply when the text report (whose headline says the rest) is on stdout."""
    lines: list[str] = []
    if report_printed:
        if decision.usage:
            sys.stderr.write(f"drifttui: error: {decision.usage}\n")
        return
    if gate.baseline is not None:
        lines += [f"baseline: {c}" for c in decision.changes] or ["baseline: nothing changed"]
    lines += [f"gate: {r}" for r in decision.failures if not r.startswith("drift: ")]   # the report says it
    if decision.usage:
        lines.append(f"drifttui: error: {decision.usage}")
    elif result.verdict == "drift" and decision.passed:
        lines.append("gate: passes (" + ("known drift, carried by the baseline" if decision.tolerated
                                        else f"--fail-on {gate.fail_on}") + ")")
    for line in lines:
        sys.stderr.write(terminal(line) + "\n")

