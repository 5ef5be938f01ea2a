"""The one-line prompts (ctrl+f search, ctrl+s save JSON, ctrl+t save SVG) show what is typed
and their default path, at every size (issue 23, item 1: the focused Input's border took the
prompt's only row, so the frame was empty)."""
from __future__ import annotations

import pytest

from drifttui.tui.app import DriftApp
from drifttui.tui.screens.prompt import PromptScreen

from .conftest import screen_text

SIZES = [(80, 24), (200, 50)]
PROMPTS = [("ctrl+s", "drifttui-report.json"), ("ctrl+t", "drifttui-screen.svg"), ("ctrl+f", "")]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("key, default", PROMPTS, ids=[k for k, _ in PROMPTS])
async def test_prompt_shows_default_and_typed_text(result, key, default, size):
    app = DriftApp(None, result=result)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        box = app.screen.query_one("#prompt-input")
        assert box.content_region.height >= 1           # the text row is not eaten by a border
        lines = screen_text(app).splitlines()
        label = next(i for i, line in enumerate(lines) if "Esc cancel)" in line)   # whole label shown
        if default:
            assert default in lines[label + 1], lines[label:]
        await pilot.press("end", *"xyz")
        await pilot.pause()
        assert (default + "xyz") in screen_text(app).splitlines()[label + 1]


async def test_search_prompt_keeps_the_last_search_visible(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+f", *"bn1", "enter")
        await pilot.pause()
        assert app.table.layer_tree.layers[app.table.cursor_layer].module.endswith("bn1")
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert any(line.strip() == "bn1" for line in screen_text(app).splitlines())
