"""A short Markdown summary (``--markdown PATH``) for ``$GITHUB_STEP_SUMMARY`` and PR comments.

Verdict and gate first, then the origin and the headline cause with its fix, the layers around
the origin, the outputs with top-1 agreement, coverage, what changed against a baseline, and
the notes and environment folded away. GitHub-flavoured Markdown; no HTML beyond <details>.
Everything that comes from the model, the ONNX file or a report is escaped (report.escape):
GitHub renders this file as HTML in step summaries and PR comments.
"""
from __future__ import annotations

from typing import Optional

from drifttui.core.result import RULE_FORMULA, Result
from drifttui.report.escape import markdown_code, markdown_text
from drifttui.report.gate import Decision, Gate, error_findings
from drifttui.report.served_text import served_lines
from drifttui.report.summary import (alerts, fmt, headline, layer_name, origin_text, output_fails, precision_story, run_label,
                                     top1_text, verdict_title)


def _cell(text: str) -> str:
    """Untrusted prose (a name, or a sentence quoting one), in a table cell or not."""
    return markdown_text(text)


def _code(text: str, table: bool = False) -> str:
    return markdown_code(text, in_table=table)


def _status_line(result: Result, decision: Decision, gate: Gate) -> str:
    if decision.passed and result.verdict == "drift":
        why = "known drift, carried by the baseline" if decision.tolerated else f"--fail-on {gate.fail_on}"
        return f"### ⚠️ drifttui: {_cell(verdict_title(result))}, gate passes ({why})"
    if decision.passed:
        return f"### ✅ drifttui: {_cell(verdict_title(result))}, gate passes"
    if decision.failures:
        return f"### ❌ drifttui: {_cell(verdict_title(result))}, gate fails (exit {decision.exit_code})"
    return f"### ⛔ drifttui: the gate could not apply (exit {decision.exit_code})"


def render(result: Result, decision: Decision, gate: Optional[Gate] = None, context: int = 3) -> str:
    """The CI summary: the verdict and why, the layers around the origin, the outputs, the rest."""
    gate = gate or Gate()
    out = _verdict(result, decision, gate) + _layers(result, context) + _outputs(result, gate)
    return "\n".join(out + _coverage_and_notes(result, decision, gate))


def _verdict(result: Result, decision: Decision, gate: Gate) -> list[str]:
    tol = result.tolerance
    out = [_status_line(result, decision, gate), "",
           f"{_code(run_label(result))} · atol={tol.atol:g}, rtol={tol.rtol:g} "
           f"({RULE_FORMULA}) · {result.samples} sample(s)", ""]
    p = result.precision
    if p is not None:
        out += [f"**Precision:** {_cell(p.summary)}" + (f" — **{p.verdict}**" if p.verdict else ""), ""]
        if p.verdict:
            out += [f"Budget rule: {_cell(p.rule)}", ""]
        if p.kernels:
            out += [f"CPU: {_cell(p.kernels)}", ""]
    served = served_lines(result)
    if served:
        out += [f"**Served:** {_cell(served[0])}", ""] + [f"- {_cell(line.strip())}" for line in served[1:]] \
            + ([""] if len(served) > 1 else [])
    out += [f"- **warning:** {_cell(alert)}" for alert in alerts(result)]
    for reason in decision.failures:
        if not reason.startswith("drift: "):       # the plain drift is the origin line below
            out.append(f"- **fails:** {_cell(reason)}")
    if decision.usage:
        out.append(f"- **cannot apply:** {_cell(decision.usage)}")
    if decision.usage or any(not r.startswith("drift: ") for r in decision.failures) or alerts(result):
        out.append("")
    if result.verdict == "drift":
        out += [f"**Origin:** {_cell(origin_text(result))}", ""]
        if precision_story(result):
            out += [f"**Precision story:** {_cell(precision_story(result))}", ""]
    f = headline(result)
    if f is not None:
        label = "Cause" if result.verdict == "drift" else "Finding"    # a passing file's warning causes nothing
        out += [f"**{label}:** {_cell(f.message)} ({_cell(f.check)}, {_cell(f.kind)})", "",
                f"**Fix:** {_cell(f.fix or '-')}", ""]
    for finding in error_findings(result)[1 if f is not None and f.severity == "error" else 0:][:5]:
        out.append(f"- error finding {_code(finding.check)} at {_code(finding.module or 'graph')}: "
                   f"{_cell(finding.message)}")
    return out


def _layers(result: Result, context: int) -> list[str]:
    from drifttui.report.text import _rows

    rows = _rows(result, context)
    if not rows:
        return []
    origin = result.drift_origin.layer if result.drift_origin else None
    title = "Layers around the origin" if origin is not None else "Largest relative errors"
    out = [f"#### {title}", "", "| # | module | class | ONNX ops | status | max abs | max rel | own err |",
           "|--:|---|---|---|---|--:|--:|--:|"]
    for L in rows:
        m = L.metrics
        name = _code(layer_name(L.module, L.call), table=True)
        out.append(f"| {L.index} | {'**' + name + '**' if L.index == origin else name} | {_cell(L.cls)} | "
                   f"{_cell(', '.join(L.op_types[:3]) or '-')} | {_cell(L.status.replace('_', ' '))} | "
                   f"{fmt(m.max_abs.worst if m else None)} | {fmt(m.max_rel.worst if m else None)} | "
                   f"{fmt(L.local.max_abs.worst if L.local else None)} |")
    return out + [""]


def _outputs(result: Result, gate: Gate) -> list[str]:
    out = ["#### Outputs", "", "| output | status | max abs | max rel | cosine | top-1 agreement |",
           "|---|---|--:|--:|--:|--:|"]
    for o in result.outputs:
        m = o.metrics
        low = gate.min_top1 is not None and o.top1_agreement is not None and o.top1_agreement < gate.min_top1
        status = "below --min-top1" if low else ("fails the tolerance" if output_fails(o) else "ok")
        out.append(f"| {_code(o.name, table=True)} | {status} | {fmt(m.max_abs.worst)} | {fmt(m.max_rel.worst)} | "
                   f"{m.cosine.worst:.6f} | {top1_text(o)} |")
    return out


def _coverage_and_notes(result: Result, decision: Decision, gate: Gate) -> list[str]:
    c = result.coverage
    out = ["", f"**Coverage:** {c.modules} module calls: {c.mapped} mapped, {c.fused} fused, "
               f"{c.not_exported} not exported, {c.unmapped} unmapped"
               + ("" if c.localized else f" (no per-layer localisation: {_cell(c.reason)})"), ""]
    if gate.baseline is not None:
        out += ["#### Against the baseline", ""]
        out += [f"- {_cell(line)}" for line in decision.changes] or ["- nothing changed"]
        out.append("")
    env = result.environment
    details = [f"- note: {_cell(n)}" for n in result.notes]
    details.append("- " + _cell(f"torch {env.torch} · onnx {env.onnx} · onnxruntime {env.onnxruntime} · "
                                f"opset {env.opset} · exporter {env.exporter} · ORT level {env.ort_opt_level}"))
    return out + ["<details><summary>Notes and environment</summary>", "", *details, "", "</details>", ""]


def render_error(exc: Exception, command: str = "check") -> str:
    """The summary of a run that could not compare (exit 2: bad input, exit 3: model/runtime)."""
    exit_code = getattr(exc, "exit_code", 3)
    problem = getattr(exc, "problem", str(exc))
    fix = getattr(exc, "fix", "")
    lines = [f"### ⛔ drifttui {command} could not compare (exit {exit_code})", "", f"**Problem:** {_cell(problem)}", ""]
    if fix:
        lines += [f"**Fix:** {_cell(fix)}", ""]
    return "\n".join(lines)
