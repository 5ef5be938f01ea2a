"""Text report of `drifttui diagnose`: each step's verdict, summary, key evidence, suggestion; then findings."""
from __future__ import annotations

from typing import Any, Optional

from rich.console import Console, Group
from rich.text import Text

from drifttui.core.result import Finding, Result, Step
from drifttui.report.escape import plain, terminal

VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "inconclusive": "yellow", "skipped": "dim"}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
MAX_INFO = 6


def _short(v: Any, width: int = 70) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, dict):
        s = ", ".join(f"{k}={_short(x, 20)}" for k, x in list(v.items())[:4])
    elif isinstance(v, list):
        s = f"[{len(v)}] " + ", ".join(_short(x, 24) for x in v[:3]) if v else "[]"
    else:
        s = str(v)
    return s if len(s) <= width else s[: width - 1] + "…"


_KEYS = {
    1: ("mutated_count", "origin"),
    2: ("zero_verdict", "zero_origin", "random_origin", "constant_but_differ"),
    3: ("op_types", "hazards", "findings", "opt_levels"),
    4: ("sweep",),
    5: ("variance_max_abs", "deterministic_verdict"),
    6: ("tensor_attributes", "param_value_diffs", "source_hazards"),
}


def _evidence_lines(step: Step) -> list[str]:
    ev = step.evidence
    lines: list[str] = []
    if step.step == 4 and "sweep" in ev:
        for r in ev["sweep"]:
            err = "" if r["origin_max_abs"] is None else f" max_abs={r['origin_max_abs']:.2e}"
            lines.append(f"tol {r['tolerance']:g}: {r['origin'] or '(no origin)'}{err}")
        return lines
    if step.step == 3 and "opt_levels" in ev:
        lv = ev["opt_levels"].get("levels", {})
        row = ", ".join(f"{k}: out {v.get('final_max_abs', 0):.1e}"
                        + (f" origin {v['origin_max_abs']:.1e}" if v.get("origin_max_abs") is not None else "")
                        for k, v in lv.items())
        if row:
            lines.append(f"ORT levels: {row}")
        fused = ev["opt_levels"].get("fused_op_types") or []
        if fused:
            lines.append("fused by ORT: " + _short(", ".join(fused), 90))
        for h in ev.get("hazards", [])[:3]:
            lines.append(f"hazard {h['node']}: {_short(h['why'], 90)}")
        for init in ev.get("initializers", [])[:3]:
            lines.append(f"init {init['name']} {init['dtype']}{init['dims']} mean={init['mean']:.3g} "
                         f"std={init['std']:.3g}" + (f" vs torch {init['torch_param']}: diff "
                                                     f"{init['max_abs_diff_vs_torch']:.2e}"
                                                     if init.get("max_abs_diff_vs_torch") is not None else ""))
        return lines
    for key in _KEYS.get(step.step, ()):
        if key in ev and ev[key] not in (None, [], {}):
            lines.append(f"{key}: {_short(ev[key], 90)}")
    return lines


def render_steps(result: Result) -> Group:
    parts: list[Any] = []
    if result.steps:
        parts.append(Text("Debugging steps", style="bold"))
        for s in result.steps:
            head = plain(f" {s.step}. {s.title:<26} ")
            head.append(terminal(f"{s.verdict.upper():<12}"), style=VERDICT_STYLE.get(s.verdict, ""))
            parts.append(head)
            parts.append(plain(f"    {s.summary}"))
            for line in _evidence_lines(s):
                parts.append(plain(f"      {line}", style="dim"))
            if s.suggestion:
                parts.append(plain(f"    → {s.suggestion}", style="cyan"))
    parts.append(render_findings(result.findings))
    return Group(*parts)


def render_findings(findings: list[Finding]) -> Any:
    if not findings:
        return Text("Findings: none", style="green")
    parts: list[Any] = [Text("Findings", style="bold")]
    infos = 0
    for f in findings:
        if f.severity == "info":
            infos += 1
            if infos > MAX_INFO:
                continue
        line = Text(" ")
        line.append(terminal(f"{f.severity.upper():<8}"), style=SEVERITY_STYLE.get(f.severity, ""))
        line.append(terminal(f"{f.check:<14}"), style="bold")
        where = f.module if f.module is not None else ""
        if f.onnx_nodes:
            where += f" [{_short(', '.join(f.onnx_nodes), 40)}]"
        if where:
            line.append(terminal(where.strip()) + ": ", style="magenta")
        line.append(terminal(f.message))
        parts.append(line)
        proof = verification_line(f)
        if proof:
            parts.append(plain(f"    {proof}", style="green" if f.verified else "yellow"))
        if f.fix and f.severity != "info":
            parts.append(plain(f"    fix: {f.fix}", style="cyan"))
    if infos > MAX_INFO:
        parts.append(Text(f"  … {infos - MAX_INFO} more info finding(s) in the JSON report", style="dim"))
    return Group(*parts)


def print_steps(result: Result, console: Optional[Console] = None) -> None:
    (console or Console()).print(render_steps(result))


def verification_line(f: Finding) -> str:
    """'verified (export): patch ... brings the origin's local error from A to B', or ''."""
    if f.verified is None and f.patch is None:
        return ""
    patch = ""
    if f.patch:
        p = f.patch
        patch = " ".join(str(x) for x in (p.get("op"), p.get("node") or p.get("name") or p.get("module"),
                                          f"{p['name']}={p['value']}" if p.get("op") == "set_attribute" else
                                          p.get("rewrite") or p.get("exporter") or "") if x)
    nums = (f" brings the origin's local error from {f.local_before:.3g} to {f.local_after:.3g}"
            if f.local_before is not None and f.local_after is not None else "")
    if f.verified:
        return f"verified ({f.kind}): {patch}{nums}"
    if f.verified is False:
        return f"unverified ({f.kind}): the proposed patch did not remove the drift" + (f" [{patch}]" if patch else "")
    return f"unverified ({f.kind}): no patch could be tried"
