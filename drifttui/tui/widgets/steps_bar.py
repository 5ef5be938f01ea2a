"""The steps bar: the six debugging steps as tabs, and the selected step's verdict,
summary, evidence and suggestion."""
from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual.widgets import Static

from drifttui.core.result import Step

SHORT = {1: "artifact", 2: "zero-input", 3: "onnx node", 4: "tolerance", 5: "determinism", 6: "custom"}
VERDICT_GLYPH = {"pass": "✓", "fail": "✗", "inconclusive": "?", "skipped": "–"}
VERDICT_STYLE = {"pass": "#5fb36b", "fail": "bold #e8503a", "inconclusive": "#f0a030", "skipped": "dim"}


def _evidence(evidence: dict[str, Any], limit: int = 160) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {fmt(x)}" for k, x in list(v.items())[:4]) + "}"
        return str(v)

    text = "  ".join(f"{k}={fmt(v)}" for k, v in evidence.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class StepsBar(Static):
    """State: ``steps`` (number → Step), ``running`` (numbers), ``messages`` (number → text)."""

    DEFAULT_CSS = """
    StepsBar { height: auto; max-height: 5; padding: 0 1; background: $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.steps: dict[int, Step] = {}
        self.running: set[int] = set()
        self.messages: dict[int, str] = {}
        self.selected: Optional[int] = None
        self.expanded = True

    def set_steps(self, steps: list[Step]) -> None:
        self.steps = {s.step: s for s in steps}
        self.running.clear()
        self.messages.clear()
        self.refresh_view()

    def refresh_view(self) -> None:
        self.update(self.render_text())

    def render_text(self) -> Text:
        text = Text()
        text.append("steps ", style="bold")
        for n in range(1, 7):
            step = self.steps.get(n)
            if n in self.running:
                glyph, style = "…", "italic"
            elif step is not None:
                glyph, style = VERDICT_GLYPH.get(step.verdict, "·"), VERDICT_STYLE.get(step.verdict, "")
            elif n in self.messages:
                glyph, style = "!", "dim"
            else:
                glyph, style = "·", "dim"
            label = f"{n}{glyph}{SHORT[n]} "
            text.append(label, style=(style + " reverse") if n == self.selected else style)
        n = self.selected
        if n is None:
            text.append("\npress 1–6 to run a step, n/p to move between steps, ? for help", style="dim")
            return text
        step = self.steps.get(n)
        if n in self.running:
            text.append(f"\nstep {n}: running…", style="italic")
        elif step is not None:
            text.append(f"\n{n}. {step.title}: ", style="bold")
            text.append(step.verdict.upper(), style=VERDICT_STYLE.get(step.verdict, ""))
            text.append(f" — {step.summary}")
            if step.evidence:
                text.append(f"\n   evidence: {_evidence(step.evidence)}", style="dim")
            tail = []
            if step.suggestion:
                tail.append(f"→ {step.suggestion}")
            if step.layers:
                tail.append(f"[l] go to layer{'s' if len(step.layers) > 1 else ''} "
                            + ", ".join(f"#{i}" for i in step.layers[:6]))
            if tail:
                text.append("\n   " + "   ".join(tail), style="italic")
        elif n in self.messages:
            text.append(f"\n{self.messages[n]}", style="#f0a030")
        else:
            text.append(f"\nstep {n} not run yet: press {n} to run it", style="dim")
        return text
