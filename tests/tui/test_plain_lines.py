"""The layer table and the inspector paint their lines without Textual's per-line styling pass
(widgets/plain_lines.py): the lines must be the ones Textual's own path paints, at every scroll
position, on the cursor row, with the inspector's left border, in both themes; and a widget with
any other border goes through Textual's path."""
from __future__ import annotations

from textual.geometry import Region
from textual.widget import Widget

from drifttui.tui.app import DriftApp
from drifttui.tui.widgets.plain_lines import is_plain, plain_lines
from tests.tui.replay import load_fixture, tiled


def _textual(widget, crop):
    widget._styles_cache.clear()
    return Widget.render_lines(widget, crop)


def _both(widget, crop, begin):
    """(ours, Textual's) for ``crop``, inside the widget's render pass."""
    begin()
    try:
        return plain_lines(widget, crop), _textual(widget, crop)
    finally:
        widget._pass = None


async def test_plain_lines_are_the_lines_textual_paints():
    result = tiled(load_fixture(), 3)
    app = DriftApp(None, result=result)
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        table, inspector = app.table, app.inspector
        assert is_plain(table) and is_plain(inspector) and inspector.styles.border_left[0]
        checked = 0
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause()
            for move in (0, 5, table.page_height + 3, 40):              # no scroll, then scrolled
                table.set_cursor(move)
                await pilot.pause()
                for widget, begin in ((table, lambda: setattr(table, "_pass", table._styles_now())),
                                      (inspector, lambda: None)):
                    full = Region(0, 0, widget.region.width, widget.region.height)
                    ours, theirs = _both(widget, full, begin)
                    assert ours is not None and len(ours) == widget.region.height
                    assert [list(s) for s in ours] == [list(s) for s in theirs], type(widget).__name__
                    assert sum(1 for s in ours if s.text.strip()) > 3
                    part = Region(3, 2, 20, 5)
                    ours, theirs = _both(widget, part, begin)
                    assert [list(s) for s in ours] == [list(s) for s in theirs]
                    # painted again (the lines kept): the same lines
                    assert [list(s) for s in _both(widget, full, begin)[0]] == [list(s) for s in _textual(widget, full)]
                    checked += 1
        assert checked == 16


async def test_other_borders_fall_back_to_textual():
    app = DriftApp(None, result=load_fixture())
    async with app.run_test(size=(80, 24)) as pilot:       # narrow: the inspector has a top border
        await pilot.pause()
        await pilot.press("i")
        await pilot.pause()
        assert app.inspector.styles.border_top[0] and not is_plain(app.inspector)
        assert plain_lines(app.inspector, Region(0, 0, 10, 1)) is None
        app.table.styles.border_right = ("vkey", "red")
        await pilot.pause()
        assert not is_plain(app.table) and plain_lines(app.table, Region(0, 0, 10, 1)) is None
