"""What the TUI says about a debugging step, as Rich renderables (no widget here).

``render_step(step, result, ...)`` is the step detail screen: the verdict and summary in
full, the fix, the layers it names, the evidence as tables (drifttui.tui.evidence) and the
ranked findings with their counterfactual verification and patch.
"""
from __future__ import annotations

from typing import Optional

from rich.console import Group, RenderableType
from rich.text import Text

from drifttui.core.result import Config, Finding, Result, Step
from drifttui.tui.evidence import evidence_renderable, fmt
from drifttui.tui.tree import display_name

VERDICT_GLYPH = {"pass": "✓", "fail": "✗", "inconclusive": "?", "skipped": "–"}
VERDICT_STYLE = {"pass": "#5fb36b", "fail": "bold #e8503a", "inconclusive": "#f0a030", "skipped": "dim"}
CONFIG_FIELDS = ("opt_level", "deterministic", "atol", "rtol", "zero_input", "samples")
# each field in the config line's own words ("det off", not "deterministic no")
_SAID = {"opt_level": "opt {}", "deterministic": "det {}", "atol": "atol {}", "rtol": "rtol {}",
         "zero_input": "zero-in {}", "samples": "n={}"}


def config_diff(ran_on: Optional[Config], shown: Optional[Config]) -> str:
    """How the configuration a step ran on differs from the one on screen ("" when equal)."""
    if ran_on is None or shown is None or ran_on == shown:
        return ""
    bits = [_SAID[f].format(_word(getattr(ran_on, f))) for f in CONFIG_FIELDS if getattr(ran_on, f) != getattr(shown, f)]
    return ", ".join(bits) or "another configuration"


def _word(value: object) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else fmt(value)


def finding_renderable(f: Finding, headline: bool = False) -> RenderableType:
    text = Text()
    text.append("headline cause  " if headline else "", style="bold #ff3d9a")
    text.append(f"[{f.severity}] ", style={"error": "bold red", "warning": "#f0a030"}.get(f.severity, "#6aa0d8"))
    text.append(f"{f.check}", style="bold")
    if f.module is not None:
        text.append(f" at {display_name(f.module)}")
    text.append(f"  kind {f.kind}", style="dim")
    text.append(f"\n{f.message}")
    if f.torch_op:
        text.append("\ntorch op: ", style="bold")
        text.append(f.torch_op + (f" ({f.aten_op})" if f.aten_op and f.aten_op != f.torch_op else ""))
    if f.verified is None:
        text.append("\nverification: not tried (no patch)", style="dim")
    else:
        text.append("\nverification: ", style="bold")
        text.append("verified" if f.verified else "NOT verified",
                    style="bold #5fb36b" if f.verified else "bold #e8503a")
        text.append(" — the patch applied to the origin's own nodes "
                    + ("brings" if f.verified else "does not bring") + " its local error under the tolerance")
    if f.local_before is not None or f.local_after is not None:
        text.append(f"\nlocal max |d|: before {fmt(f.local_before)} → after {fmt(f.local_after)}")
    if f.onnx_nodes:
        text.append(f"\nnodes: {', '.join(f.onnx_nodes)}", style="dim")
    if f.fix:
        text.append("\nfix: ", style="bold")
        text.append(f.fix, style="italic")
    parts: list[RenderableType] = [text]
    if f.patch:
        parts.append(Text("patch", style="bold"))
        parts.append(evidence_renderable(f.patch))
    if f.evidence:
        parts.append(Text("evidence", style="bold"))
        parts.append(evidence_renderable(f.evidence))
    return Group(*parts)


def with_verification(evidence: dict, result: Optional[Result]) -> dict:
    """The step's findings records with the verification the result holds for them: the local
    error before → after the patch, and the patch itself (docs/tui.md promises both)."""
    records = evidence.get("findings")
    if result is None or not isinstance(records, list) or not records:
        return evidence
    by_key = {(f.check, f.message): f for f in result.findings}
    out = []
    for r in records:
        f = by_key.get((r.get("check"), r.get("message"))) if isinstance(r, dict) else None
        if f is None:
            out.append(r)
            continue
        extra = {"local before → after": f"{fmt(f.local_before)} → {fmt(f.local_after)}"
                 if f.local_before is not None or f.local_after is not None else "—",
                 "patch": f.patch if f.patch else "—"}
        out.append({**r, **extra})
    return {**evidence, "findings": out}


def render_step(step: Step, result: Optional[Result], stale: str = "") -> RenderableType:
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{step.step}. {step.title}  ", style="bold")
    head.append(f"{VERDICT_GLYPH.get(step.verdict, '·')} {step.verdict.upper()}",
                style=VERDICT_STYLE.get(step.verdict, ""))
    parts.append(head)
    if stale:
        parts.append(Text(f"stale: this step ran on {stale}; the result on screen differs "
                          f"(press {step.step} to rerun it)", style="bold #f0a030"))
    parts.append(Text(step.summary))
    parts.append(Text("\nFix", style="bold underline"))
    parts.append(Text(step.suggestion or "no change suggested by this step", style="italic" if step.suggestion else "dim"))
    if step.layers:
        names = []
        for i in step.layers:
            if result is not None and 0 <= i < len(result.layers):
                names.append(f"#{i} {display_name(result.layers[i].module)}")
            else:
                names.append(f"#{i}")
        parts.append(Text("\nLayers named (l jumps to them): " + ", ".join(names)))
    parts.append(Text("\nEvidence", style="bold underline"))
    evidence = step.evidence
    if evidence.get("module") == "":                # a root origin: named as everywhere else
        evidence = {**evidence, "module": "(root)"}
    parts.append(evidence_renderable(with_verification(evidence, result)))
    if result is not None and result.findings and step.step in (3, 6):
        parts.append(Text("\nFindings (ranked, headline cause first)", style="bold underline"))
        for k, f in enumerate(result.findings):
            parts.append(finding_renderable(f, headline=k == 0))
            parts.append(Text(""))
    return Group(*parts)
