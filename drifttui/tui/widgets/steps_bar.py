"""The steps bar: the six debugging steps as tabs, and the shown step's verdict, summary and
fix (``s`` opens its full result: drifttui.tui.step_view).

Step results are kept across reruns with the configuration and the result they ran on; a
step whose configuration or result differs from the one on screen is marked stale, not dropped.
"""
from __future__ import annotations

from typing import Optional

from rich.text import Text
from textual.widgets import Static

from drifttui.core.base.progress import Estimate, Progress, duration
from drifttui.core.result import Config, Result, Step
from drifttui.report.escape import terminal, terminal_data
from drifttui.tui.staleness import ResultKey, result_diff, result_key
from drifttui.tui.step_view import VERDICT_GLYPH, VERDICT_STYLE, config_diff

SHORT = {1: "artifact", 2: "zero-input", 3: "onnx node", 4: "tolerance", 5: "determinism", 6: "custom"}
SUMMARY_LINES = 2


class StepsBar(Static):
    """State: ``steps`` (number → Step), ``ran_on`` (number → Config it ran on), ``running``,
    ``progress`` (number → last Progress), ``messages`` (number → text), ``shown_config``."""

    DEFAULT_CSS = """
    StepsBar { height: auto; max-height: 9; padding: 0 1; background: $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.steps: dict[int, Step] = {}
        self.ran_on: dict[int, Config] = {}
        self.running: set[int] = set()
        self.progress: dict[int, Progress] = {}
        self.left: dict[int, Optional[float]] = {}      # seconds left of a running step, once measured
        self.estimate = Estimate()
        self.messages: dict[int, str] = {}
        self.selected: Optional[int] = None
        self.shown_config: Optional[Config] = None
        self.ran_on_result: dict[int, ResultKey] = {}
        self.shown_result: Optional[ResultKey] = None
        self.notes: list[str] = []          # the result's run-level notes (observer effect, ...)

    def set_step(self, step: Step, config: Optional[Config], result: Optional[Result] = None) -> None:
        self.steps[step.step] = step
        if config is not None:
            self.ran_on[step.step] = config
        key = result_key(result)
        if key is not None:
            self.ran_on_result[step.step] = key
        self.messages.pop(step.step, None)

    def show_result(self, result: Result) -> None:
        """``result`` is now on screen; the steps that came with it (diagnose, a saved report)
        ran on it."""
        self.shown_config = result.config
        self.shown_result = result_key(result)
        self.notes = list(result.notes)
        for step in result.steps:
            self.set_step(step, result.config, result)

    def stale(self, number: int) -> str:
        """How the configuration or the result step ``number`` ran on differs from the result on
        screen ("" if not)."""
        bits = [config_diff(self.ran_on.get(number), self.shown_config),
                result_diff(self.ran_on_result.get(number), self.shown_result)]
        return "; ".join(b for b in bits if b)

    def set_progress(self, number: int, p: Progress) -> None:
        """A running step's progress, and its time left once a first counted step has run."""
        self.progress[number] = p
        self.left[number] = self.estimate(p)

    def refresh_view(self) -> None:
        self.update(self.render_text())

    def on_resize(self) -> None:
        """The note line is cut to the width: cut again when the width changes (it was cut to
        78 columns, the width before the first layout, at every width)."""
        self.refresh_view()

    def _tabs(self) -> Text:
        text = Text(no_wrap=True, overflow="crop")
        text.append("steps ", style="bold")
        no_color = self.is_mounted and self.app.no_color
        for n in range(1, 7):
            step = self.steps.get(n)
            if n in self.running:
                glyph, style = "…", "italic"
            elif step is not None and self.stale(n):     # its ✓/✗ was about another result: not shown
                glyph, style = "~", "italic" if no_color else "italic dim"
            elif step is not None:
                glyph, style = VERDICT_GLYPH.get(step.verdict, "·"), VERDICT_STYLE.get(step.verdict, "")
                if no_color:          # colour-less red is bright black on bright black in xterm
                    style = "bold underline" if step.verdict == "fail" else ""
            elif n in self.messages:
                glyph, style = "!", "" if no_color else "dim"
            else:
                glyph, style = "·", "" if no_color else "dim"
            text.append(f"{n}{glyph}{self.label(n)}", style=(style + " reverse") if n == self.selected else style)
            text.append(" ")
        return text

    def label(self, n: int) -> str:
        """The chip's name: the step that ran says what it was (step 4 on a reduced-precision file
        is the precision bisect, not the tolerance sweep)."""
        step = self.steps.get(n)
        if n == 4 and step is not None and step.title.lower().startswith("precision"):
            return "precision"
        return SHORT[n]

    def _note_line(self) -> Text:
        """The run-level notes in ONE line at any width (all of them on (root)'s detail)."""
        more = f" (+{len(self.notes) - 1} more)" if len(self.notes) > 1 else ""
        tail = f"{more} — in full: Home, Enter"     # "all on (root)" read as "all samples" (fourth pass)
        room = max(10, self._width() - len(tail) - 2)
        note = self.notes[0]
        if len(note) > room:        # cut between words ("3 of the 20…", not "20 sample…")
            cut = note[:room - 1]
            note = (cut[:cut.rfind(" ")] if " " in cut[room // 2:] else cut).rstrip(" ,;:(") + "…"
        return Text(f"\n⚠ {note}{tail}", style="#f0a030", no_wrap=True, overflow="crop")

    def _width(self) -> int:
        width = self.content_region.width if self.is_mounted else 0
        return width if width > 10 else 78

    def render_text(self) -> Text:
        text = self._tabs()
        n = self.selected
        if n is None:
            if self.notes:
                text.append_text(self._note_line())
            else:
                text.append("\npress 1–6 to run a step, s for its full result, ? for help", style="dim")
            return text
        step = self.steps.get(n)
        if n in self.running:
            p = self.progress.get(n)
            text.append(f"\nstep {n} running", style="italic")
            if p is not None:
                text.append(f" {p.done + 1}/{p.total}" if p.total and p.done < p.total else "")
                left = self.left.get(n)
                text.append(f" · {duration(left)} left" if left and left >= 1 else "", style="bold")
                said = p.message.removeprefix(f"step {n}: ")        # "step 5 running step 5: ..." said it twice
                text.append(f" {terminal(said)}" if said else "", style="dim")
            text.append("  (x cancels)", style="dim")
            if step is not None:
                text.append(f"\nprevious result: {step.verdict.upper()}", style="dim")
            return text
        if step is None:
            msg = self.messages.get(n)
            text.append(f"\n{terminal(msg)}" if msg else f"\nstep {n} not run yet: press {n} to run it",
                        style="#f0a030" if msg else "dim")
            return text
        text.append_text(self._summary(step))
        if n in self.messages:
            text.append(f"\n{terminal(self.messages[n])}", style="#f0a030")
        return text

    def _summary(self, step: Step) -> Text:
        step = terminal_data(step)      # a step's texts quote untrusted names
        text = Text()
        head = Text()
        head.append(f"\n{step.step}. {step.title}: ", style="bold")
        head.append(step.verdict.upper(), style=VERDICT_STYLE.get(step.verdict, ""))
        stale = self.stale(step.step)
        if stale:
            head.append(f" (stale: ran on {stale})", style="bold #f0a030")
        head.append(f" — {step.summary}")
        room = SUMMARY_LINES * self._width()
        if head.cell_len > room:
            head.truncate(room - 1)
            head.append("…")
        text.append_text(head)
        if step.suggestion:
            text.append("\n→ fix: ", style="bold")
            text.append(step.suggestion, style="italic")
        hints = ["[s] full result"]
        if step.layers:
            hints.append(f"[l] go to layer{'s' if len(step.layers) > 1 else ''} "
                         + ", ".join(f"#{i}" for i in step.layers[:6]))
        if step.suggestion:
            hints.append("[y] copy fix")
        text.append("\n" + "   ".join(hints), style="dim")
        return text
