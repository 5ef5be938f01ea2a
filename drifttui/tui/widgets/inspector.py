"""The inspector pane: a summary of the layer under the cursor (Enter opens its full detail).

Line-rendered: the layer's renderable (drifttui.tui.layer_view) is rendered to strips once
per cursor move (no Textual re-layout), and only visible lines are drawn.
"""
from __future__ import annotations

from typing import Optional

from rich.console import RenderableType
from rich.segment import Segment
from rich.text import Text
from textual.events import Resize
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from drifttui.core.progress import Progress
from drifttui.core.result import Result
from drifttui.tui.layer_view import render_layer


class Inspector(ScrollView, can_focus=True):
    """Scrollable detail pane, line-rendered: the layer's renderable is rendered to
    strips once per cursor move (no Textual re-layout), and only visible lines are
    drawn.  Focus it with Tab to scroll with the arrow keys; Enter opens the full detail."""

    DEFAULT_CSS = """
    Inspector { overflow-x: hidden; overflow-y: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.layer_index: Optional[int] = None
        self.renderable: RenderableType = Text("no layer", style="dim")
        self._lines: list[Strip] = []
        self._width = 0

    def show(self, result: Optional[Result], layer: Optional[int], progress: Optional[Progress] = None) -> None:
        """Show ``layer`` of ``result``; ``progress``: the run is still going (partial result)."""
        self.layer_index = layer
        if result is None or layer is None or not 0 <= layer < len(result.layers):
            self.renderable = Text("no layer under the cursor", style="dim")
        else:
            self.renderable = render_layer(result, result.layers[layer], progress=progress)
        self._width = 0          # re-render lazily, at the current width
        self.scroll_to(y=0, animate=False, immediate=True)
        self._layout_lines()
        self.refresh()

    @property
    def text(self) -> str:
        """Plain text of what the inspector shows (for tests)."""
        self._layout_lines()
        return "\n".join(strip.text for strip in self._lines)

    def _layout_lines(self) -> None:
        width = max(10, self.scrollable_content_region.width - 2) if self.is_mounted else 60
        if width == self._width and self._lines:
            return
        self._width = width
        console = self.app.console
        options = console.options.update(width=width, min_width=width, max_width=width, height=None)
        lines = console.render_lines(self.renderable, options, pad=True)
        pad = [Segment(" ")]
        self._lines = [Strip(pad + line + pad, width + 2) for line in lines]
        self.virtual_size = Size(width + 2, len(self._lines))

    def on_resize(self, event: Resize) -> None:
        self._width = 0
        self._layout_lines()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        self._layout_lines()
        index = round(self.scroll_y) + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if 0 <= index < len(self._lines):
            return self._lines[index].apply_style(base).adjust_cell_length(width, base)
        return Strip.blank(width, base)
