"""CI annotations: GitHub Actions workflow commands and GitLab code-quality JSON.

- :func:`github` returns ``::error title=...::message`` lines (the origin, a gate failure, an
  error finding) and ``::warning`` lines (warning findings, unattributed layers, a drift the
  baseline tolerates). The CLI prints them only when ``GITHUB_ACTIONS=true``.
- :func:`gitlab` returns a code-quality report (``--gitlab PATH``, ``artifacts:reports:codequality``).
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Optional

from drifttui.core.result import UNATTRIBUTED, Result
from drifttui.report.escape import github_data, github_property, terminal
from drifttui.report.gate import Decision
from drifttui.report.summary import alerts, cause_text, layer_name, origin_name, origin_text, verdict_title


def in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _lines(*parts: Optional[str]) -> str:
    """drifttui's multi-line message from sentences that quote names: each sentence escaped on
    its own (a name's line break shows as ``\\x0a``), then joined by real line breaks."""
    return "\n".join(terminal(p) for p in parts if p)


def _command(kind: str, title: str, message: str, file: Optional[str] = None) -> str:
    """``message`` is already escaped for a terminal (:func:`_lines`); ``title`` is one sentence."""
    props = f"title={github_property(terminal(title))}"
    if file:
        props = f"file={github_property(terminal(file))},{props}"
    return f"::{kind} {props}::{github_data(message)}"


def _model_file(result: Result) -> Optional[str]:
    """The user's model file, when the spec names one (annotations then attach to it)."""
    spec = result.config.model or ""
    head = spec.rsplit(":", 1)[0] if ":" in spec else spec
    return head if head.endswith(".py") and os.path.isfile(head) else None


def github(result: Result, decision: Decision) -> list[str]:
    file = _model_file(result)
    lines: list[str] = []
    cause = cause_text(result)
    drift_message = _lines(origin_text(result), cause)
    if result.verdict == "drift" and decision.tolerated:
        lines.append(_command("warning", f"drifttui: known {verdict_title(result)}",
                              _lines(origin_text(result), cause, "(carried by the baseline: the gate passes)"), file))
    elif result.verdict == "drift":
        kind = "error" if decision.failures else "warning"
        lines.append(_command(kind, f"drifttui: {verdict_title(result)}", drift_message, file))
    for alert in alerts(result):
        lines.append(_command("warning", "drifttui: the verdict alone hides this", _lines(alert), file))
    for reason in decision.failures:
        if not reason.startswith("drift: "):
            lines.append(_command("error", "drifttui: gate fails", _lines(reason), file))
    if decision.usage:
        lines.append(_command("error", "drifttui: gate cannot apply", _lines(decision.usage), file))
    for f in result.findings:
        if f.severity in ("error", "warning"):
            at = f" at {f.module}" if f.module else ""
            lines.append(_command(f.severity, f"drifttui {f.check}{at}",
                                  _lines(f.message, f"fix: {f.fix}" if f.fix else None), file))
    for L in result.layers:
        if L.status == UNATTRIBUTED:
            lines.append(_command("warning", f"drifttui: unattributed error at {layer_name(L.module, L.call)}",
                                  _lines(L.note or "fails the tolerance but no module owns the error"), file))
    return lines


_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def gitlab(result: Result, decision: Decision) -> str:
    """GitLab code-quality JSON: one issue per drift origin, gate failure and error/warning finding."""
    path = _model_file(result) or result.config.onnx or "drifttui"
    issues = []

    def add(check: str, severity: str, description: str, key: str) -> None:
        digest = hashlib.sha256(f"{result.config.model}|{check}|{key}".encode()).hexdigest()
        issues.append({"description": description, "check_name": f"drifttui/{check}", "fingerprint": digest,
                       "severity": severity, "location": {"path": path, "lines": {"begin": 1}}})

    if result.verdict == "drift":
        cause = cause_text(result)
        add("drift", "minor" if decision.tolerated else "critical",
            f"{verdict_title(result)}: {origin_text(result)}" + (f"; {cause}" if cause else ""), origin_name(result))
    for reason in decision.failures:
        if not reason.startswith("drift: "):
            add("gate", "critical", reason, reason.split(":", 1)[0])
    for f in result.findings:
        if f.severity in ("error", "warning"):
            add(f.check, _SEVERITY[f.severity], f"{f.check} at {f.module or 'the graph'}: {f.message}",
                f"{f.module}|{f.message[:80]}")
    return json.dumps(issues, indent=2) + "\n"


def github_error(exc: Exception) -> str:
    return _command("error", f"drifttui: could not compare (exit {getattr(exc, 'exit_code', 3)})", _lines(str(exc)))


def gitlab_error(exc: Exception) -> str:
    digest = hashlib.sha256(f"error|{exc}".encode()).hexdigest()
    return json.dumps([{"description": f"drifttui could not compare: {exc}", "check_name": "drifttui/error",
                        "fingerprint": digest, "severity": "blocker",
                        "location": {"path": "drifttui", "lines": {"begin": 1}}}], indent=2) + "\n"
