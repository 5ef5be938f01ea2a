"""The status line: verdict, origin, progress, current configuration and timings."""
from __future__ import annotations

from typing import Optional

from rich.text import Text
from textual.widgets import Static

from drifttui.api import Progress
from drifttui.core.base.progress import Estimate, duration
from drifttui.core.result import Config, Result
from drifttui.report.escape import terminal
from drifttui.report.summary import drift_word, overflow_word
from drifttui.tui import served_view
from drifttui.tui.tree import display_name


def config_text(config: Optional[Config], compact: bool = False) -> Text:
    """The configuration line; ``compact``: the form that fits 60 columns with the run's cost
    (``tol 1e-04/1e-04 zero off``, single spaces)."""
    if config is None:
        return Text("no configuration", style="dim")
    gap = " " if compact else "  "
    text = Text()
    text.append("opt ", style="dim")
    text.append(config.opt_level, style="bold")
    text.append(f"{gap}det ", style="dim")
    text.append("on" if config.deterministic else "off", style="bold")
    if compact:
        text.append(" tol ", style="dim")
        text.append(f"{config.atol:.0e}/{config.rtol:.0e}", style="bold")
    else:
        text.append("  atol ", style="dim")
        text.append(f"{config.atol:.0e}", style="bold")
        text.append(" rtol ", style="dim")
        text.append(f"{config.rtol:.0e}", style="bold")
    text.append(f"{gap}zero{'' if compact else '-in'} ", style="dim")
    text.append("on" if config.zero_input else "off", style="bold")
    text.append(f"{gap}n={config.samples}", style="dim")
    return text


def timings_text(timings: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.2f}s" for k, v in timings.items())


def run_time_text(timings: dict[str, float]) -> str:
    """What the result on screen cost: its capture's real time, and whether this run re-decided
    a capture it already had ("re-decided") or captured again on a reused export ("reused
    export"); never the 0.0s a reused stage adds."""
    capture = timings.get("capture_time")
    if timings.get("capture_reused"):
        return f"capture {capture:.1f}s reused, re-decided" if capture is not None else "re-decided (capture reused)"
    total = timings.get("total")
    if total is None:
        return ""
    if timings.get("prepare_reused"):
        return f"{total:.1f}s (export reused)"
    return f"{total:.1f}s"


def short_run_time_text(timings: dict[str, float]) -> str:
    """``run_time_text`` in at most 12 columns."""
    if timings.get("capture_reused"):
        return "re-decided"
    total = timings.get("total")
    return "" if total is None else f"{total:.1f}s" + (" reused" if timings.get("prepare_reused") else "")


# The short forms of the engine's long stage messages, for a status line at 80 columns (the
# engine's message stays whole in the CLI and the inspector; "observer check: does marking values
# as outputs change ORT's numbers?" was cut to "… ORT's…").
SHORT = {
    "observer": "observer check: do extra outputs change ORT?",
    "export": "exporting",
    "sessions": "opening ORT sessions",
    "map": "mapping modules to ONNX",
    "load": "loading the model",
}


def short_message(p: Progress) -> str:
    """The stage's short form with a heartbeat's elapsed time (``exporting · 12 s``)."""
    word = SHORT.get(p.stage, p.message)
    return word + (f" · {p.elapsed:.0f} s" if p.elapsed is not None and p.stage in SHORT else "")


def progress_text(p: Optional[Progress], left: Optional[float] = None, short: bool = False) -> Text:
    """``samples 5/20 · 30 s left`` and the engine's message, each said once and the short part
    first, so that a cut at 80 columns cuts the message, not the count or the time left: a message
    that starts with its stage's name stands for it (``observer check: …``, not ``observer
    observer check: …``); ``short``: the stage's short form (``SHORT``) for the message."""
    text = Text()
    if p is None:
        text.append("starting…", style="italic")
        return text
    msg = terminal((short_message(p) if short else p.message).strip())
    if p.elapsed is not None and not short:        # a heartbeat: how long the opaque call has run
        msg += f" · {p.elapsed:.0f} s"
    count = f"{p.done}/{p.total}" if p.total else ""
    if msg.startswith(p.stage) and not (count and count in msg):
        head, msg = msg, ""
    else:
        head = p.stage + (f" {count}" if count else "")
        if msg == p.stage or (count and count in msg):
            msg = ""
    text.append(head, style="italic")
    if left is not None and left >= 1:
        text.append(f" · {duration(left)} left", style="bold")
    if msg:
        text.append(f" {msg}", style="dim")
    return text


def changed_fields(pending: Optional[Config], shown: Optional[Config]) -> str:
    if pending is None or shown is None or pending == shown:
        return ""
    plain = config_text(pending).plain.split("  ")
    before = config_text(shown).plain.split("  ")
    return "  ".join(p for p, b in zip(plain, before) if p != b)


class StatusLine(Static):
    """Two lines that never wrap: the verdict, origin and run progress; then the
    configuration OF THE RESULT ON SCREEN (a rerun in progress is shown as "→ <change>")."""

    DEFAULT_CSS = """
    StatusLine { height: 2; padding: 0 1; background: $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.result: Optional[Result] = None
        self.config: Optional[Config] = None        # the config of the result on screen
        self.pending: Optional[Config] = None       # the config of the run in progress
        self.progress: Optional[Progress] = None
        self.left: Optional[float] = None          # seconds left of the run's counted stage
        self.estimate = Estimate()
        self.running = False
        self.message = ""

    def set_state(self, *, result: Optional[Result] = None, config: Optional[Config] = None,
                  progress: Optional[Progress] = None, running: Optional[bool] = None,
                  message: Optional[str] = None, pending: Optional[Config] = None) -> None:
        if result is not None:
            self.result = result
        if config is not None:
            self.config = config
        if pending is not None:
            self.pending = pending
        if running is not None:
            self.running = running
            if not running:
                self.progress = None
                self.pending = None
        if progress is not None:
            self.progress = progress
            self.left = self.estimate(progress)
        if message is not None:
            self.message = message
        self.update(self.render_text())

    def first_line(self, compact: bool = False, short: bool = False) -> Text:
        """Verdict, origin, then a rerun's progress; ``compact``: the origin without its class
        and error (a rerun's "samples 4/20 · 5 s left" was cut to "5 s le…" at 80 columns);
        ``short``: the progress message's short form too."""
        text = Text(no_wrap=True, overflow="ellipsis")
        r = self.result
        if r is None:
            text.append("no result yet", style="dim")
        elif r.verdict == "ok":
            budgeted = r.precision is not None and bool(r.precision.verdict)
            text.append(" WITHIN BUDGET " if budgeted else " OK ", style="bold black on #5fb36b")
            text.append(f" {r.precision.format} within its precision budget over {r.samples} samples" if budgeted  # type: ignore[union-attr]
                        else f" no drift over {r.samples} samples")
        else:
            word = drift_word(r)
            text.append(f" {word} ({r.precision.format}) " if word == "OVER BUDGET" else f" {word} ",  # type: ignore[union-attr]
                        style="bold white on #e8503a")
            if r.drift_origin is not None:
                o = r.drift_origin
                text.append(" ◆ ", style="bold reverse" if self.is_mounted and self.app.no_color else "#ff3d9a")
                text.append(display_name(o.module), style="bold")
                if not compact:
                    over = overflow_word(r)         # the engine counted it (Metrics.overflow): said, not decided
                    text.append(f" {o.cls} {o.max_abs:.1e}" + (f" ({over})" if over else ""))
            if r.precision_origin is not None and not compact:  # both stories (core decide): the precision's beside it
                text.append(f"  also over budget from {display_name(r.precision_origin.module)}", style="#f0a030")
        if r is not None and r.precision is not None and r.precision.kernels:
            # an int8 file: the verdict holds for this processor's int8 kernels (docs/deploy.md)
            parts = r.precision.kernels.split(": ")
            sat = "may saturate" in r.precision.kernels
            text.append(f"  int8 on {parts[1] if len(parts) > 1 else '?'}{' (may saturate)' if sat else ''}",
                        style="#f0a030" if sat else "dim")
        text.append_text(served_view.badge(r))       # the served verdict (Triton), the batch sweep's
        if self.running:
            text.append("  ⟳ ", style="bold #f0a030")
            change = changed_fields(self.pending, self.config)
            if change:          # what the rerun changes first: the progress message is cut, not it
                text.append(f"→ {change}: ", style="bold #f0a030")
            text.append_text(progress_text(self.progress, self.left, short))
        elif self.message:
            text.append(f"  {self.message}", style="italic #f0a030")
        return text

    def second_line(self, width: int = 1000) -> Text:
        """The configuration, then what the result cost; at 80 columns the short form of the cost
        ("re-decided", "6.2s") rather than a cut one ("capture 6.2s r…"); at 60 the compact
        configuration too."""
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append_text(config_text(self.config))
        r = self.result
        cost = ""
        if r is not None and r.timings and not self.running:
            cost = run_time_text(r.timings)
            for served in (served_view.served_cost(r), served_view.served_cost(r, short=True)):
                full = f"{cost} + {served}" if served and cost else served or cost
                if text.cell_len + 2 + len(full) <= width:
                    break
            cost = full
            if text.cell_len + 2 + len(cost) > width:
                cost = short_run_time_text(r.timings)
        if text.cell_len + 2 + len(cost) > width:     # 60 columns: the compact form, nothing cut
            text = Text(no_wrap=True, overflow="ellipsis")
            text.append_text(config_text(self.config, compact=True))
        if cost:
            text.append(f"  {cost}", style="dim")
        return text

    def render_text(self) -> Text:
        """Two lines, each cut to the width with "…" (a Static wraps a Text whatever its no_wrap:
        a long progress message at 80 columns ran onto the configuration line)."""
        width = self.content_region.width if self.is_mounted and self.content_region.width > 10 else 78
        lines = []
        first = self.first_line()
        if self.running and first.cell_len > width:
            first = self.first_line(compact=True)
        if self.running and first.cell_len > width:
            first = self.first_line(compact=True, short=True)
        for line in (first, self.second_line(width)):
            line.truncate(width, overflow="ellipsis")
            lines.append(line)
        return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)

    def on_resize(self) -> None:
        self.update(self.render_text())
