"""The layer table: a line-rendered ScrollView (like toolong's log lines).

Only the visible lines are drawn; rows come from the flattened ``LayerTree.rows``
and rendered strips are cached per (layer, cursor, expanded, width).  Line 0 is a
fixed header; row ``r`` is drawn on line ``r - scroll_y + 1``.
"""
from __future__ import annotations

from typing import Optional

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Click, Resize
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from drifttui.core.result import Config, Result, Tolerance
from drifttui.tui.heat import CELL_WIDTH, COLUMNS, COLUMN_TITLES, heat_cell, thresholds
from drifttui.tui.tree import ROOT_NAME, LayerTree
from drifttui.tui.widgets.plain_lines import plain_lines
from drifttui.tui.widgets.track import clicked_top, thumb, track_segment
from drifttui.tui.widgets.table_style import (  # noqa: F401  (re-exported: the views import them from here)
    HOLDS_ORIGIN_MARK, LIGHT_STATUS_STYLES, NO_COLOR_STATUS, ORIGIN_MARK, SORT_LABEL, STATUS_SHORT, STATUS_STYLES, STATUS_TEXT,
    Columns, _fit, column_needs, origin_style_for,
)

class LayerTable(ScrollView, can_focus=True):
    """Module tree with heat cells; the cursor row drives the inspector."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("left", "collapse", "Collapse", show=False),
        Binding("right", "expand", "Expand", show=False),
        Binding("space", "toggle", "Expand/collapse", show=False),
        Binding("E", "expand_all", "Expand all", show=False),
        Binding("C", "collapse_all", "Collapse all", show=False),
    ]

    COMPONENT_CLASSES = {"layer-table--header", "layer-table--cursor", "layer-table--dim"}

    DEFAULT_CSS = """
    LayerTable { overflow-x: hidden; overflow-y: auto; scrollbar-size-vertical: 0; }
    LayerTable > .layer-table--header { text-style: bold; background: $panel; }
    LayerTable > .layer-table--cursor { background: $primary 30%; text-style: bold; }
    LayerTable:focus > .layer-table--cursor { background: $primary 55%; text-style: bold; }
    LayerTable:light > .layer-table--cursor { background: $primary 10%; text-style: bold; }
    LayerTable:light:focus > .layer-table--cursor { background: $primary 16%; text-style: bold; }
    LayerTable > .layer-table--dim { color: $text-muted; }
    """

    class CursorMoved(Message):
        """The cursor is on another layer (or none: empty table)."""

        def __init__(self, layer: Optional[int]) -> None:
            self.layer = layer
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.layer_tree: LayerTree = LayerTree([])
        self.result: Optional[Result] = None
        self.cursor = 0
        self._thresholds = thresholds(Tolerance(Config.atol, Config.rtol))   # the run defaults until a result comes
        self._cache: LRUCache[tuple, Strip] = LRUCache(4096)
        self._columns = Columns(80)
        self._needs: tuple[int, int, int] = (24, 14, 16)
        self._last_layer: Optional[int] = None
        self._anchor: Optional[int] = None     # the layer a filter hid from under the cursor
        self._pass: Optional[tuple] = None     # styles and width of the render pass under way

    # -- data ------------------------------------------------------------------
    def set_result(self, result: Optional[Result], keep_state: bool = True) -> None:
        """Show ``result``; keeps collapse state, filters and the cursor's layer if asked."""
        old_key = None
        state = None
        if keep_state and self.result is not None and self.layer_tree.layers:
            state = self.layer_tree.state()
            cur = self.cursor_layer
            if cur is not None:
                old_key = (self.layer_tree.layers[cur].module, self.layer_tree.layers[cur].call)
        self.result = result
        origin = result.drift_origin.layer if result and result.drift_origin else None
        self.layer_tree = LayerTree(result.layers if result else [], origin)
        self._thresholds = thresholds(result.tolerance) if result else self._thresholds
        self._needs = column_needs(self.layer_tree.layers)
        self._columns = Columns(0)
        if state is not None:
            self.layer_tree.restore(state)
        self._cache.clear()
        target = self.layer_tree.index_of_key(old_key) if old_key else origin
        self._rows_changed()
        if target is not None:
            self.go_to_layer(target)
        else:
            self.set_cursor(0)
        self._notify(force=True)

    def _rows_changed(self) -> None:
        self.virtual_size = Size(0, len(self.layer_tree.rows) + 1)
        self.refresh()

    @property
    def cursor_layer(self) -> Optional[int]:
        rows = self.layer_tree.rows
        return rows[self.cursor] if 0 <= self.cursor < len(rows) else None

    # -- cursor ------------------------------------------------------------------
    @property
    def page_height(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def set_cursor(self, row: int, scroll: bool = True, center: bool = False) -> None:
        n = len(self.layer_tree.rows)
        row = max(0, min(row, n - 1)) if n else 0
        old = self.cursor
        self.cursor = row
        if scroll:
            self.scroll_to_row(row, center)
        self.refresh_line(old + 1)
        self.refresh_line(row + 1)
        self._notify()

    def scroll_to_row(self, row: int, center: bool = False) -> None:
        top = round(self.scroll_y)
        page = self.page_height
        if center and not top <= row < top + page:
            self.scroll_to(y=max(0, row - page // 2), animate=False, immediate=True)
        elif row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + page:
            self.scroll_to(y=row - page + 1, animate=False, immediate=True)

    def go_to_layer(self, layer: int) -> bool:
        """Move the cursor to ``layer``, expanding its ancestors (and clearing a filter hiding it)."""
        if not 0 <= layer < len(self.layer_tree.layers):
            return False
        if self.layer_tree.row_of(layer) is None:
            self.layer_tree.reveal(layer)
            self._cache.clear()
            self._rows_changed()
        row = self.layer_tree.row_of(layer)
        if row is None:
            return False
        self.set_cursor(row, center=True)
        return True

    def go_to_origin(self) -> bool:
        return self.layer_tree.origin is not None and self.go_to_layer(self.layer_tree.origin)

    def _notify(self, force: bool = False) -> None:
        layer = self.cursor_layer
        if force or layer != self._last_layer:
            self._last_layer = layer
            self.post_message(self.CursorMoved(layer))

    # -- actions -----------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        self._anchor = None
        self.set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._anchor = None
        self.set_cursor(self.cursor + direction * self.page_height)

    def action_first(self) -> None:
        self._anchor = None
        self.set_cursor(0)

    def action_last(self) -> None:
        self._anchor = None
        self.set_cursor(len(self.layer_tree.rows) - 1)

    def _after_fold(self, layer: int) -> None:
        self._rows_changed()
        row = self.layer_tree.row_of(layer)
        self.set_cursor(row if row is not None else 0)

    def action_collapse(self) -> None:
        layer = self.cursor_layer
        if layer is None:
            return
        if self.layer_tree.collapse(layer):
            self._after_fold(layer)
        elif self.layer_tree.parent[layer] is not None and self.layer_tree.row_of(self.layer_tree.parent[layer]) is not None:
            self.set_cursor(self.layer_tree.row_of(self.layer_tree.parent[layer]))  # type: ignore[arg-type]

    def action_expand(self) -> None:
        layer = self.cursor_layer
        if layer is not None and self.layer_tree.expand(layer):
            self._after_fold(layer)

    def action_toggle(self) -> None:
        layer = self.cursor_layer
        if layer is not None and self.layer_tree.toggle(layer):
            self._after_fold(layer)

    def action_expand_all(self) -> None:
        layer = self.cursor_layer
        self.layer_tree.expand_all()
        self._after_fold(layer if layer is not None else 0)

    def action_collapse_all(self) -> None:
        layer = self.cursor_layer
        self.layer_tree.collapse_all()
        self._rows_changed()
        if layer is not None:
            visible = layer
            while self.layer_tree.row_of(visible) is None and self.layer_tree.parent[visible] is not None:
                visible = self.layer_tree.parent[visible]  # type: ignore[assignment]
            self.set_cursor(self.layer_tree.row_of(visible) or 0)

    def set_filter(self, text: str | None = None, only_drift: bool | None = None) -> None:
        """Filter rows; the cursor stays on its layer, or comes back to it when a filter that
        hid it is relaxed (unless the user moved the cursor meanwhile)."""
        layer = self._anchor if self._anchor is not None else self.cursor_layer
        self.layer_tree.set_filter(text, only_drift)
        self._cache.clear()
        self._rows_changed()
        row = self.layer_tree.row_of(layer) if layer is not None else None
        if row is None:
            self._anchor = layer
            self.set_cursor(0)
        else:
            self._anchor = None
            self.set_cursor(row, center=True)
        self._notify(force=True)

    def set_sort(self, column: Optional[str]) -> None:
        layer = self.cursor_layer
        self.layer_tree.set_sort(column)
        self._cache.clear()
        self._rows_changed()
        row = self.layer_tree.row_of(layer) if layer is not None else None
        self.set_cursor(row if row is not None else 0, center=True)

    def search(self, text: str, direction: int = 1) -> Optional[int]:
        """Jump to the next/previous layer matching ``text`` (revealing it); its index or None."""
        self._anchor = None
        found = self.layer_tree.search(text, self.cursor_layer, direction)
        if found is not None:
            self.go_to_layer(found)
        return found

    def on_click(self, event: Click) -> None:
        if event.x >= self.size.width - 1 and event.y >= 1:        # the scroll track
            top = clicked_top(event.y - 1, self.page_height, len(self.layer_tree.rows))
            self.scroll_to(y=top, animate=False, immediate=True)
            self.refresh()
        elif event.y >= 1:
            self._anchor = None
            self.set_cursor(round(self.scroll_y) + event.y - 1, scroll=False)

    def on_resize(self, event: Resize) -> None:
        self._cache.clear()
        self.scroll_to_row(self.cursor, center=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    # -- rendering -----------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        """One render pass: the base style, the width and the component styles are looked up
        once per pass, not per line (``rich_style`` walks the ancestors each time: it was a
        fifth of a frame on a 10,000-row table)."""
        self._pass = self._styles_now()
        try:
            lines = plain_lines(self, crop)     # Textual's styling pass skipped where it changes nothing
            return lines if lines is not None else super().render_lines(crop)
        finally:
            self._pass = None

    def _styles_now(self) -> tuple:
        """(width, base, header, cursor, dim colour, the scroll thumb's lines)."""
        return (self.scrollable_content_region.width, self.rich_style,
                self.get_component_rich_style("layer-table--header"),
                self.get_component_rich_style("layer-table--cursor"),
                self.get_component_rich_style("layer-table--dim").color,
                thumb(round(self.scroll_y), self.page_height, len(self.layer_tree.rows)))

    def _pass_styles(self) -> tuple:
        return self._pass if self._pass is not None else self._styles_now()

    def render_line(self, y: int) -> Strip:
        full, base, header_style, cursor_style, _dim, bar = self._pass_styles()
        width = full - 1                                 # the last column: the scroll track
        if width != self._columns.width:
            self._columns = Columns(width, self._needs)
            self._cache.clear()
        if y == 0:
            key = ("header", width)
            strip = self._cache.get(key)
            if strip is None:
                strip = self._header(width, base + header_style)
                strip = Strip([*strip, Segment(" ", base + header_style)], full)
                self._cache[key] = strip
            return strip
        row = round(self.scroll_y) + y - 1
        rows = self.layer_tree.rows
        if not rows and y == 1 and self.result is not None:
            tree = self.layer_tree
            why = f"no rows match {tree.filter_text!r}" if tree.filter_text else "no rows match"
            if tree.only_drift:
                why += " among drifting rows (f shows all)"
            msg = f" {why}  (Esc in the filter box clears it)"
            return Strip([Segment(msg, base + Style(italic=True))]).adjust_cell_length(full, base)
        on = (y - 1) in bar
        if row >= len(rows):
            return Strip([*Strip.blank(width, base), track_segment(on, base)], full) if rows else \
                Strip.blank(full, base)
        layer = rows[row]
        is_cursor = row == self.cursor
        key = (layer, is_cursor, layer in self.layer_tree.expanded, width, on)
        strip = self._cache.get(key)
        if strip is None:
            if is_cursor:
                base = base + cursor_style
            strip = Strip([*self._render_row(layer, width, base), track_segment(on, base)], full)
            self._cache[key] = strip
        return strip

    def _header(self, width: int, style: Style) -> Strip:
        c = self._columns
        parts = [" ", _fit("module", c.module)]
        if c.cls:
            parts += [" ", _fit("class", c.cls)]
        if c.ops:
            parts += [" ", _fit("onnx ops", c.ops)]
        parts += [" ", _fit("status", c.status)]
        for col in COLUMNS:
            title = COLUMN_TITLES[col] + ("▼" if self.layer_tree.sort == col else "")
            parts += [" ", title.rjust(CELL_WIDTH)[:CELL_WIDTH]]
        return Strip([Segment("".join(parts), style)]).adjust_cell_length(width, style)

    def _render_row(self, i: int, width: int, base: Style) -> list[Segment]:
        tree = self.layer_tree
        layer = tree.layers[i]
        c = self._columns
        # foreground only: a background here would punch a hole in the cursor-row highlight
        dim = base + Style(color=self._pass_styles()[4])
        no_color = self.app.no_color
        light = not self.app.current_theme.dark
        segs: list[Segment] = []
        is_origin = i == tree.origin
        holds = not is_origin and tree.origin is not None and tree.children[i] and i not in tree.expanded \
            and i in tree.ancestors(tree.origin)
        mark = ORIGIN_MARK if is_origin else HOLDS_ORIGIN_MARK if holds else " "
        segs.append(Segment(mark, base + origin_style_for(no_color, light)))
        if tree.children[i]:
            fold = "▾ " if i in tree.expanded else "▸ "
        else:
            fold = "  "
        name = layer.module.rsplit(".", 1)[-1] if layer.module else ROOT_NAME
        if layer.call:
            name += f"#{layer.call}"
        indent = "  " * min(layer.depth, 12)
        segs.append(Segment(_fit(indent + fold + name, c.module), base + Style(bold=is_origin)))
        if c.cls:
            segs.append(Segment(" " + _fit(layer.cls, c.cls), dim))
        if c.ops:
            ops = ",".join(dict.fromkeys(layer.op_types))
            segs.append(Segment(" " + _fit(ops, c.ops), dim))
        status = STATUS_TEXT.get(layer.status, layer.status)
        if c.status < 12:
            status = STATUS_SHORT.get(layer.status, status)
        status_style = (NO_COLOR_STATUS.get(layer.status, Style()) if no_color
                        else (LIGHT_STATUS_STYLES if light else STATUS_STYLES).get(layer.status, Style()))
        segs.append(Segment(" " + _fit(status, c.status), base + status_style))
        values, fails = tree.values_fails(i)
        for col, value, fail in zip(COLUMNS, values, fails):
            text, style = heat_cell(value, self._thresholds[col], fail, no_color, light)
            segs.append(Segment(" ", base))
            segs.append(Segment(text, base + style))
        return _fit_segments(segs, width, base)


def _fit_segments(segs: list[Segment], width: int, style: Style) -> list[Segment]:
    """``segs`` at ``width`` cells, as ``Strip.adjust_cell_length`` makes them, without building the
    Strip (a row's strip is built once, with its scroll-track cell: a page of new rows made three)."""
    n = sum(cell_len(s.text) for s in segs)
    if n == width:
        return segs
    if n < width:
        return [*segs, Segment(" " * (width - n), style)]
    return list(Strip(segs).adjust_cell_length(width, style))
