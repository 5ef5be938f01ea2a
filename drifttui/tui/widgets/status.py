"""The status line: verdict, origin, progress, current configuration and timings."""
from __future__ import annotations

from typing import Optional

from rich.text import Text
from textual.widgets import Static

from drifttui.api import Progress
from drifttui.core.result import Config, Result


def config_text(config: Optional[Config]) -> Text:
    text = Text()
    if config is None:
        return Text("no configuration", style="dim")
    text.append("opt ", style="dim")
    text.append(config.opt_level, style="bold")
    text.append("  det ", style="dim")
    text.append("on" if config.deterministic else "off", style="bold")
    text.append("  atol ", style="dim")
    text.append(f"{config.atol:.0e}", style="bold")
    text.append(" rtol ", style="dim")
    text.append(f"{config.rtol:.0e}", style="bold")
    text.append("  zero-in ", style="dim")
    text.append("on" if config.zero_input else "off", style="bold")
    text.append(f"  n={config.samples}", style="dim")
    return text


def timings_text(timings: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.2f}s" for k, v in timings.items())


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine { height: 2; padding: 0 1; background: $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.result: Optional[Result] = None
        self.config: Optional[Config] = None
        self.progress: Optional[Progress] = None
        self.running = False
        self.message = ""

    def set_state(self, *, result: Optional[Result] = None, config: Optional[Config] = None,
                  progress: Optional[Progress] = None, running: Optional[bool] = None,
                  message: Optional[str] = None) -> None:
        if result is not None:
            self.result = result
        if config is not None:
            self.config = config
        if running is not None:
            self.running = running
            if not running:
                self.progress = None
        if progress is not None:
            self.progress = progress
        if message is not None:
            self.message = message
        self.update(self.render_text())

    def render_text(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        r = self.result
        if r is None:
            text.append("no result yet", style="dim")
        elif r.verdict == "ok":
            text.append(" OK ", style="bold black on #5fb36b")
            text.append(f" no drift over {r.samples} samples")
        else:
            text.append(" DRIFT ", style="bold white on #e8503a")
            if r.drift_origin is not None:
                o = r.drift_origin
                text.append(" origin ◆ ", style="#ff3d9a")
                text.append(f"{o.module or '(root)'}", style="bold")
                text.append(f" {o.cls} max abs {o.max_abs:.1e}")
        if self.running:
            p = self.progress
            text.append("  ⟳ ", style="bold #f0a030")
            if p is None:
                text.append("starting…", style="italic")
            else:
                text.append(f"{p.stage}", style="italic")
                if p.total:
                    text.append(f" {p.done}/{p.total}")
                if p.message:
                    text.append(f" {p.message}", style="dim")
        elif self.message:
            text.append(f"  {self.message}", style="italic #f0a030")
        text.append("\n")
        text.append_text(config_text(self.config))
        if r is not None and r.timings and not self.running:
            text.append("  time " + timings_text(r.timings), style="dim")
        return text
