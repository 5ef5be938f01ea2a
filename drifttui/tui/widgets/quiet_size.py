"""Set a ScrollView's virtual size without a layout of the whole screen.

``Widget.virtual_size`` is a layout reactive: assigning it re-arranges every widget on the
screen, which on a cursor move (the inspector shows another layer, with another line count)
cost more than the rest of the frame together.  A new line count needs a layout only when it
shows or hides the scrollbar (the content width changes); otherwise updating the scrollbar is
enough.  Uses Textual's ``set_reactive`` and ``_scroll_update`` (Textual is pinned exactly)."""
from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


def set_virtual_size(view: ScrollView, size: Size) -> None:
    old = view.virtual_size
    if size == old:
        return
    height = view.size.height
    bar_kept = view.styles.overflow_y == "scroll" or (old.height > height) == (size.height > height)
    same_bar = height > 0 and bar_kept and old.width == size.width
    if not (view.is_mounted and same_bar):
        view.virtual_size = size
        return
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)
    view.refresh()
