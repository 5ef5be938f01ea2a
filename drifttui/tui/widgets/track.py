"""A one-column scroll indicator drawn inside a line-rendered view's own lines.

Textual's ScrollBar is a widget of its own, re-rendered line by line on every scroll and on
every inspector update: on a 10,000-row table that was a third of a frame.  The table and
the inspector draw their position in their last column instead (``┃`` the visible part,
``│`` the rest; glyphs, so it reads without colour); a click on it scrolls there."""
from __future__ import annotations

from rich.segment import Segment
from rich.style import Style

THUMB, TRACK = "┃", "│"
THUMB_STYLE, TRACK_STYLE = Style(bold=True), Style(dim=True)


def thumb(top: int, page: int, total: int) -> range:
    """Lines 0..page-1 of the view covered by the thumb (empty: everything fits)."""
    if total <= page or page <= 0:
        return range(0)
    length = max(1, round(page * page / total))
    span = max(1, total - page)
    start = round(min(top, span) / span * (page - length))
    return range(start, start + length)


def track_segment(on: bool, base: Style) -> Segment:
    return Segment(THUMB, base + THUMB_STYLE) if on else Segment(TRACK, base + TRACK_STYLE)


def clicked_top(y: int, page: int, total: int) -> int:
    """The first line to show after a click on line ``y`` of the track."""
    if total <= page or page <= 1:
        return 0
    return round(y / (page - 1) * (total - page))
