"""The inspector pane: a summary of the layer under the cursor (Enter opens its full detail).

Line-rendered: the layer's renderable (drifttui.tui.layer_view) is rendered to strips once
per cursor move (no Textual re-layout), and only visible lines are drawn.
"""
from __future__ import annotations

from typing import Optional

from rich.console import Group, RenderableType
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.events import Resize
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from drifttui.core.base.progress import Progress
from drifttui.core.result import Result
from drifttui.tui.layer_view import render_layer
from drifttui.tui.widgets.plain_lines import plain_lines
from drifttui.tui.widgets.quiet_size import set_virtual_size
from drifttui.tui.widgets.track import thumb, track_segment


class Inspector(ScrollView, can_focus=True):
    """Scrollable detail pane, line-rendered: the layer's renderable is rendered to
    strips once per cursor move (no Textual re-layout), and only visible lines are
    drawn.  Focus it with Tab to scroll with the arrow keys; Enter opens the full detail."""

    BINDINGS = [Binding("escape", "back", "Back to the table", show=False)]

    DEFAULT_CSS = """
    Inspector { overflow-x: hidden; overflow-y: auto; scrollbar-size-vertical: 0; }
    """

    def action_back(self) -> None:
        self.app.set_focus(self.app.query_one("#table"))

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.layer_index: Optional[int] = None
        self.renderable: Optional[RenderableType] = Text("no layer", style="dim")
        self._lines: list[Strip] = []
        self._width = 0
        self._pass: Optional[tuple] = None     # width, style, scroll and thumb of the render pass under way
        self._source: tuple = (None, None, None)
        self._parts: list[RenderableType] = []     # parts of the content not rendered yet
        self._styled: dict[tuple, Strip] = {}

    def show(self, result: Optional[Result], layer: Optional[int], progress: Optional[Progress] = None) -> None:
        """Show ``layer`` of ``result``; ``progress``: the run is still going (partial result).
        Rendered lazily: a hidden inspector (below 120 columns) costs a cursor move nothing."""
        self.layer_index = layer
        self._source = (result, layer, progress)
        self.renderable = None
        self._width = 0          # re-render lazily, at the current width
        self.scroll_to(y=0, animate=False, immediate=True)
        if self.display:
            self._layout_lines()
        self.refresh()

    def _build(self) -> RenderableType:
        result, layer, progress = self._source
        if result is None or layer is None or not 0 <= layer < len(result.layers):
            return Text("no layer under the cursor", style="dim")
        return render_layer(result, result.layers[layer], progress=progress,
                            no_color=self.is_mounted and self.app.no_color)

    @property
    def text(self) -> str:
        """Plain text of what the inspector shows (for tests)."""
        self._layout_lines(upto=1 << 30)
        return "\n".join(strip.text for strip in self._lines)

    def _layout_lines(self, upto: Optional[int] = None) -> None:
        """Render the content to lines, part by part, until line ``upto`` (default: the visible
        ones) exists: a cursor move renders one screenful, scrolling renders the rest."""
        # the content: region width minus a blank column each side and the scroll track
        width = max(10, self.scrollable_content_region.width - 3) if self.is_mounted else 60
        if upto is None:
            upto = round(self.scroll_y) + max(self.scrollable_content_region.height, 1) if self.is_mounted else 1 << 30
        if width != self._width or self.renderable is None:
            if self.renderable is None:
                self.renderable = self._build()
            self._width = width
            self._styled.clear()
            self._lines = []
            self._parts = list(self.renderable.renderables) if isinstance(self.renderable, Group) \
                else [self.renderable]
        if len(self._lines) >= upto or not self._parts:
            return
        console = self.app.console
        options = console.options.update(width=width, min_width=width, max_width=width, height=None)
        pad = [Segment(" ")]
        while self._parts and len(self._lines) < upto:
            part = self._parts.pop(0)
            self._lines += [Strip(pad + line + pad, width + 2)
                            for line in console.render_lines(part, options, pad=True)]
        # while parts remain, one more screenful can be scrolled to (and is rendered on the way)
        more = max(self.scrollable_content_region.height, 1) if self._parts else 0
        set_virtual_size(self, Size(width + 3, len(self._lines) + more))

    def on_focus(self) -> None:
        """Focused to be read and scrolled: render all of it (End and the track are exact)."""
        self._layout_lines(upto=1 << 30)
        self.refresh()

    def on_resize(self, event: Resize) -> None:
        self._width = 0
        self._layout_lines()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styled.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        """One render pass: width, base style, scroll offset and the scroll thumb looked up once,
        not per line; styled lines are kept until the content, the size or the theme changes."""
        self._layout_lines()
        height = self.scrollable_content_region.height
        top = round(self.scroll_y)
        self._pass = (self.scrollable_content_region.width, self.rich_style, top,
                      thumb(top, height, self.virtual_size.height))
        try:
            lines = plain_lines(self, crop)     # Textual's styling pass skipped where it changes nothing
            return lines if lines is not None else super().render_lines(crop)
        finally:
            self._pass = None

    def render_line(self, y: int) -> Strip:
        current = self._pass
        if current is None:            # outside a render pass (tests): look everything up now
            self._layout_lines()
            top = round(self.scroll_y)
            current = (self.scrollable_content_region.width, self.rich_style, top,
                       thumb(top, self.scrollable_content_region.height, self.virtual_size.height))
        width, base, top, bar = current
        index = top + y
        on = y in bar
        key = (index, on, width)
        strip = self._styled.get(key)
        if strip is None:          # one Strip per line: base style applied to the segments directly
            body = list(Segment.apply_style(self._lines[index], base)) if 0 <= index < len(self._lines) \
                else [Segment(" " * (self._width + 2), base)]
            strip = Strip([*body, track_segment(on, base)], self._width + 3)
            if width != self._width + 3:
                strip = strip.adjust_cell_length(width, base)
            self._styled[key] = strip
        return strip
