"""At 80 columns the inspector's and the filter's footers use short forms that fit, instead of
being cut where the information is (issue 35 item 5); wide, the long forms."""
from __future__ import annotations

from drifttui.tui.app import DriftApp
from drifttui.tui.widgets.inspector import Inspector
from drifttui.tui.widgets.key_footer import KeyFooter

from .replay import load_fixture


async def _footer(size, focus):
    app = DriftApp(None, result=load_fixture())
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if focus == "inspector":
            await pilot.press("i")
            await pilot.pause()
            app.query_one(Inspector).focus()
        else:
            await pilot.press("slash")
        await pilot.pause()
        footer = app.query_one(KeyFooter)
        return footer.keys_text().plain, footer.content_region.width


async def test_inspector_and_filter_footers_fit_80_columns():
    text, width = await _footer((80, 24), "inspector")
    assert len(text) <= width and text.endswith("q Quit") and "Tab/Esc table" in text
    text, width = await _footer((80, 24), "filter")
    assert len(text) <= width and "Tab table" in text and "Esc clear" in text
    text, width = await _footer((140, 40), "inspector")
    assert "Tab/Esc back to the table" in text and len(text) <= width
