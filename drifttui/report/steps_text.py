"""Text report of `drifttui diagnose`: each step's verdict, summary, key evidence, suggestion; then findings."""
from __future__ import annotations

from typing import Any, Optional

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from drifttui.core.result import Finding, Result, Step
from drifttui.report.console import UNWRAPPED_WIDTH, report_console
from drifttui.report.escape import plain, terminal
from drifttui.report.summary import layer_name, nonfinite_said
from drifttui.report.text import indented

VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "inconclusive": "yellow", "skipped": "dim"}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
MAX_INFO = 6
MAX_ITEMS = 3


def _first(items: list, n: Optional[int]) -> tuple[list, str]:
    """A list's first ``n`` items and ", …" when there are more (``n`` None: every item, nothing cut)."""
    if n is None or len(items) <= n:
        return list(items), ""
    return list(items[:n]), ", …"


def _short(v: Any, n: Optional[int] = MAX_ITEMS) -> str:
    """``v`` in one line: a dict's items, a list's length and first ``n`` items (a terminal: the JSON report
    has the rest; piped, ``n`` is None and nothing is cut); long text is never cut (it wraps, indented)."""
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_origin_or(k, x, n)}" for k, x in v.items())
    if isinstance(v, list):
        shown, more = _first(v, n)
        return f"[{len(v)}] " + ", ".join(_short(x, n) for x in shown) + more if v else "[]"
    return str(v)


def _origin_or(key: str, v: Any, n: Optional[int] = MAX_ITEMS) -> str:
    """A module name where the root's is "" (``module=``, ``zero_origin:``) reads "(root)"."""
    if v == "" and ("origin" in key or key == "module"):
        return "(root)"
    return _short(v, n)


_KEYS = {
    1: ("mutated_count", "origin"),
    2: ("zero_verdict", "zero_origin", "random_origin", "constant_but_differ"),
    3: ("op_types", "hazards", "findings", "opt_levels"),
    4: ("sweep",),
    5: ("variance_max_abs", "deterministic_verdict"),
    6: ("tensor_attributes", "param_value_diffs", "source_hazards"),
}


def _evidence_lines(step: Step, n: Optional[int] = MAX_ITEMS) -> list[str]:
    """The step's key evidence, one line each (wrapped, never cut)."""
    ev = step.evidence
    lines: list[str] = []
    if step.step == 4 and "sweep" in ev:
        for r in ev["sweep"]:
            err = "" if r["origin_max_abs"] is None else f" max_abs={r['origin_max_abs']:.2e}"
            err += nonfinite_said(r.get("origin_nonfinite"))
            where = "(no origin)" if r["origin"] is None else layer_name(r["origin"])
            lines.append(f"tol {r['tolerance']:g}: {where}{err}")
        return lines
    if step.step == 3 and "opt_levels" in ev:
        return _node_lines(ev, n)
    for key in _KEYS.get(step.step, ()):
        if key in ev and ev[key] not in (None, [], {}):
            lines.append(f"{key}: {_origin_or(key, ev[key], n)}")
    return lines


def _node_lines(ev: dict, n: Optional[int] = MAX_ITEMS) -> list[str]:
    """Step 3: the ORT levels, what ORT fuses, the origin's hazards and initializers."""
    lines: list[str] = []
    lv = ev["opt_levels"].get("levels", {})
    row = ", ".join(f"{k}: out {v.get('final_max_abs', 0):.1e}"
                    + (f" origin {v['origin_max_abs']:.1e}" if v.get("origin_max_abs") is not None else "")
                    for k, v in lv.items())
    if row:            # its figures are over the sweep's few samples, not the report's (fourth pass)
        n = ev["opt_levels"].get("samples")
        lines.append(f"ORT levels (max |d| on {n} sample{'s' if n != 1 else ''}): {row}" if n else f"ORT levels: {row}")
    fused = ev["opt_levels"].get("fused_op_types") or []
    if fused:
        lines.append("fused by ORT: " + ", ".join(fused))
    for h in _first(ev.get("hazards", []), n)[0]:
        lines.append(f"hazard {h['node']}: {h['why']}")
    for init in _first(ev.get("initializers", []), n)[0]:
        lines.append(f"init {init['name']} {init['dtype']}{init['dims']} mean={init['mean']:.3g} "
                     f"std={init['std']:.3g}" + (f" vs torch {init['torch_param']}: diff "
                                                 f"{init['max_abs_diff_vs_torch']:.2e}"
                                                 if init.get("max_abs_diff_vs_torch") is not None else ""))
    return lines


EVIDENCE_INDENT = 6


def render_steps(result: Result, n: Optional[int] = MAX_ITEMS) -> Group:
    """The six steps and the findings; long lines wrap at the indent they start at.  ``n``: how many items of a
    list a line shows (None: all, as piped output does)."""
    parts: list[Any] = []
    if result.steps:
        parts.append(Text("Debugging steps", style="bold"))
        for s in result.steps:
            head = plain(f" {s.step}. {s.title:<26} ")
            head.append(terminal(f"{s.verdict.upper():<12}"), style=VERDICT_STYLE.get(s.verdict, ""))
            parts.append(head)
            parts.append(indented(plain(s.summary), 4))
            for line in _evidence_lines(s, n):
                parts.append(indented(plain(line, style="dim"), EVIDENCE_INDENT))
            if s.suggestion:
                parts.append(indented(plain(f"→ {s.suggestion}", style="cyan"), 4))
    parts.append(render_findings(result.findings, n))
    return Group(*parts)


def render_findings(findings: list[Finding], n: Optional[int] = MAX_ITEMS) -> Any:
    if not findings:
        return Text("Findings: none", style="green")
    parts: list[Any] = [Text("Findings", style="bold")]
    infos = 0
    for f in findings:
        if f.severity == "info":
            infos += 1
            if n is not None and infos > MAX_INFO:
                continue
        label = Text(" ")
        label.append(f"{f.severity.upper():<7}", style=SEVERITY_STYLE.get(f.severity, ""))
        label.append(terminal(f" {f.check}"), style="bold")
        line = Text()
        where = layer_name(f.module) if f.module is not None else ""     # None: the graph; "": the root
        if f.onnx_nodes:
            shown, more = _first(f.onnx_nodes, n)
            where += f" [{', '.join(shown)}{more}]"
        if where:
            line.append(terminal(where.strip()) + ": ", style="magenta")
        line.append(terminal(f.message))
        parts.append(_finding_row(label, line))
        proof = verification_line(f)
        if proof:
            parts.append(indented(plain(proof, style="green" if f.verified else "yellow"), 4))
        if f.fix and f.severity != "info":
            parts.append(indented(plain(f"fix: {f.fix}", style="cyan"), 4))
    if n is not None and infos > MAX_INFO:
        parts.append(Text(f"  … {infos - MAX_INFO} more info finding(s) in the JSON report", style="dim"))
    return Group(*parts)


def _finding_row(label: Text, line: Text) -> Table:
    """``SEVERITY check  message``: the message wraps under itself, not under the label."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, min_width=22)
    grid.add_column()
    grid.add_row(label, line)
    return grid


def print_steps(result: Result, console: Optional[Console] = None) -> None:
    console = console or report_console()
    whole = console.width >= UNWRAPPED_WIDTH        # piped: nothing is cut (docs/cli.md)
    console.print(render_steps(result, None if whole else MAX_ITEMS))


def _patch_words(p: dict) -> str:
    """A patch spec in a few words: ``rewrite /body/Div floor_div``; a sequence, its patches in turn."""
    if p.get("op") == "sequence" and p.get("patches"):
        inner = [_patch_words(q) for q in p["patches"]]
        return f"{len(inner)} patches together: {', '.join(inner[:4])}" + (", ..." if len(inner) > 4 else "")
    return " ".join(str(x) for x in (p.get("op"), p.get("node") or p.get("name") or p.get("module"),
                                     f"{p['name']}={p['value']}" if p.get("op") == "set_attribute" else
                                     p.get("rewrite") or p.get("exporter") or "") if x)


def verification_line(f: Finding) -> str:
    """'verified (export): patch ... brings the origin's local error from A to B', or ''."""
    if f.verified is None and f.patch is None:
        return ""
    patch = _patch_words(f.patch) if f.patch else ""
    nums = (f" brings the origin's local error from {f.local_before:.3g} to {f.local_after:.3g}"
            if f.local_before is not None and f.local_after is not None else "")
    if f.verified and not f.patch and f.kind == "saturation":      # a copy of the whole file, not a patch
        return (f"verified ({f.kind}): the file re-quantized with reduce_range (7-bit weights), checked end to "
                f"end: {f.evidence.get('reduce_range copy', 'within budget')}")
    if f.verified:
        return f"verified ({f.kind}): {patch}{nums}"
    if f.verified is False:
        return f"unverified ({f.kind}): the proposed patch did not remove the drift" + (f" [{patch}]" if patch else "")
    if patch:       # proposed, never run: another module than the origin, or past the origin's patch budget
        return (f"unverified ({f.kind}): its patch [{patch}] was not tried (patches are tried at the drift "
                "origin, within its budget)")
    return f"unverified ({f.kind}): no patch could be tried"
