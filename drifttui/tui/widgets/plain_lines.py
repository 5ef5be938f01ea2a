"""Render a line-rendered widget's lines without Textual's per-line styling pass, when that pass
would change nothing.

For every line it paints, Textual's ``StylesCache.render`` builds a new ``Strip`` (borders,
padding, tint, opacity: none here) and runs the app's line filters over every segment of it; on a
scroll every visible line is painted again, so a cursor move that scrolls the 10,000-row table
paid that for each row even though the row's strip came from our own cache (half of a frame).
For a widget with no outline, padding, tint, opacity, hatch or border title, and no border but
perhaps a left one (the inspector's), that pass returns its content line unchanged but for the
border's segment and the filters, so this builds that line itself (the border segment from
Textual's own ``get_box``) and keeps it, filtered, per content strip: the widget's own strips are
cached, so a row scrolled back into view costs dict lookups.  Any other styling goes through
Textual's own path.  Textual is pinned exactly (pyproject); tests/tui/test_plain_lines.py checks
the lines are the ones Textual's path paints.
"""
from __future__ import annotations

from typing import Optional

from textual._border import get_box
from textual.geometry import Region, Spacing
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget

_NO_PADDING = Spacing(0, 0, 0, 0)
_KEPT = 2048            # final lines kept per widget (a few screens of a scrolled table)


def is_plain(widget: Widget) -> bool:
    """Nothing but the content, a left border and the app's filters reaches the screen."""
    styles = widget.styles
    (top, _), (right, _), (bottom, _), _left = styles.border
    return (not widget.BLANK and styles.padding == _NO_PADDING and not (top or right or bottom)
            and not any(kind for kind, _ in styles.outline)
            and styles.tint.a == 0 and widget.opacity == 1.0 and styles.text_opacity == 1.0
            and (not styles.has_rule("hatch") or styles.hatch == "none")
            and widget._border_title is None and widget._border_subtitle is None
            and not widget.hover_style._link_id)


def plain_lines(widget: Widget, crop: Region) -> Optional[list[Strip]]:
    """The lines of ``crop`` as Textual's path paints them, or None when the widget is not plain."""
    if not is_plain(widget):
        return None
    width = widget.region.width
    base_background, background = widget.background_colors
    inner, outer = Style(background=base_background + background), Style(background=base_background)
    kind, color = widget.styles.border_left
    left = get_box(kind, inner, outer, Style(foreground=base_background + color))[1][0] if kind else None
    content_width = width - (1 if left is not None else 0)
    filters = widget.get_line_filters()
    look = (width, left, background, tuple(filters))
    kept: dict = widget.__dict__.setdefault("_plain_kept", {})
    if kept.get("look") != look or len(kept) > _KEPT:
        kept.clear()
        kept["look"] = look
    out = []
    for y in crop.line_range:
        content = widget.render_line(y)
        hit = kept.get(id(content))
        if hit is not None and hit[0] is content:
            out.append(hit[1])
            continue
        strip = content.adjust_cell_length(content_width, inner.rich_style)
        if left is not None:
            strip = Strip([left, *strip], width)
        for line_filter in filters:
            strip = strip.apply_filter(line_filter, background)
        kept[id(content)] = (content, strip)
        out.append(strip)
    if crop.column_span != (0, width):
        x1, x2 = crop.column_span
        out = [strip.crop(x1, x2) for strip in out]
    return out
