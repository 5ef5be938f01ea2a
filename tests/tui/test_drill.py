"""The drill-down (issue 23): from a layer, Enter shows where the error sits: the error per
output channel as a heat strip, the worst channels, the per-sample errors with the worst sample
marked, the channels per error decade.  On a recorded real-engine result with a drift in ONE
BatchNorm channel (tests/tui/fixtures/resnet18-bn-channel.json: channel 5 of layer2.0.bn2)."""
from __future__ import annotations

import dataclasses

from drifttui.tui import runner
from drifttui.tui.app import DriftApp
from drifttui.tui.screens.detail import DetailScreen

from .conftest import screen_text, wait_until
from .replay import ReplayEngine, load_fixture

NAME = "resnet18-bn-channel"


def _without_channels(result):
    return result.with_(layers=[dataclasses.replace(l, channels=None) for l in result.layers])


async def test_enter_on_the_origin_names_the_channel_and_the_sample():
    result = load_fixture(NAME)
    origin = result.layers[result.drift_origin.layer]
    worst_sample = origin.metrics.max_abs.worst_sample
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.table.cursor_layer == origin.index
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        first = screen_text(app)                     # the first screen, without scrolling
        assert "Where the error sits" in first and "worst channels: #5 " in first
        text = " ".join(app.screen.text.split())
        assert f"◆ sample #{worst_sample}" in text and "← worst" in text
        assert "Channels per error decade" in text
        assert "from the capture" in text
        strip = next(line for line in app.screen.text.splitlines() if line.strip().startswith("0 "))
        glyphs = strip.split()[1]
        assert glyphs[5] in "▓█" and set(glyphs[:5] + glyphs[6:]) <= set("·░▒")   # one hot channel


async def test_layer_without_channels_is_computed_by_the_engine_in_the_background():
    recorded = load_fixture(NAME)
    engine = ReplayEngine(NAME)
    engine.drill_gate.clear()
    app = DriftApp(engine, result=_without_channels(recorded))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: engine.drills)
        assert "computing the per-channel errors" in " ".join(app.screen.text.split())
        assert engine.drills[0][0] == recorded.drift_origin.layer
        engine.drill_gate.set()
        await wait_until(pilot, lambda: "worst channels: #5 " in app.screen.text)
        await wait_until(pilot, lambda: not runner.alive_threads())


async def test_leaving_the_drill_down_cancels_the_engine_pass():
    engine = ReplayEngine(NAME)
    engine.drill_gate.clear()
    app = DriftApp(engine, result=_without_channels(load_fixture(NAME)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: engine.drills)
        await pilot.press("escape")
        await pilot.pause()
        token = engine.drills[0][1]
        assert token is not None and token.cancelled and not isinstance(app.screen, DetailScreen)
        await pilot.press("down", "enter")            # another layer: a new, uncancelled pass
        await wait_until(pilot, lambda: len(engine.drills) == 2)
        assert not engine.drills[1][1].cancelled
        engine.drill_gate.set()                       # no engine thread outlives the test
        await wait_until(pilot, lambda: not runner.alive_threads())


async def test_saved_report_without_channels_says_how_to_get_them():
    app = DriftApp(None, result=_without_channels(load_fixture(NAME)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert "open it with its model" in " ".join(app.screen.text.split())


def test_drill_down_80x24(snap_compare):
    assert snap_compare(DriftApp(None, result=load_fixture(NAME)), terminal_size=(80, 24), press=["enter"])
