"""The error profile above the layer table: the text report's one-line picture of where the error
starts and grows (report/profile.py), fitted to the width, coloured by decide's side of the line
(without colour the bar heights and ◆ say it)."""
from __future__ import annotations

from typing import Optional

from rich.text import Text
from textual.widgets import Static

from drifttui.core.result import Result
from drifttui.report.profile import BARS, ORIGIN, points, strip

LABEL = "profile "
LEGEND = "  ▅▆▇█ over · ◆ origin"


class ProfileStrip(Static):
    DEFAULT_CSS = """
    ProfileStrip { height: 1; padding: 0 1; }
    """

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__("", id=id)
        self.result: Optional[Result] = None

    def show(self, result: Optional[Result]) -> None:
        self.result = result
        self.update(self.render_text())

    def on_resize(self) -> None:
        self.update(self.render_text())

    def render_text(self) -> Text:
        width = self.content_region.width if self.is_mounted and self.content_region.width > 10 else 78
        pts = points(self.result) if self.result is not None else []
        text = Text(no_wrap=True, overflow="crop")
        if not pts:
            text.append("profile: no layer compared yet", style="dim")
            return text
        legend = LEGEND if width - len(LABEL) - len(LEGEND) >= min(len(pts), 24) else ""
        chars = strip(pts, max(8, width - len(LABEL) - len(legend)))
        no_color = self.is_mounted and self.app.no_color
        text.append(LABEL, style="bold")
        for c in chars:
            if c == ORIGIN:
                style = "bold reverse" if no_color else "bold #ff3d9a"
            elif c in BARS[4:]:
                style = "" if no_color else "#e8503a"
            else:
                style = "" if no_color else "#5fb36b"
            text.append(c, style=style)
        text.append(legend, style="" if no_color else "dim")
        return text
