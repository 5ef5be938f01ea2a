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


def _per_sample_lines(app) -> list[str]:
    return [l.strip() for l in app.screen.text.splitlines() if l.strip().lstrip("◆ ").startswith("sample #")]


async def test_a_compares_the_layer_on_every_sample_in_the_background():
    """(issue 35, point 5) the per-sample block showed the layer samples only, without saying so;
    it now says "3 of 8", and `a` runs the layer on every sample without blocking the screen."""
    from .replay import load_every_sample

    engine = ReplayEngine()                                  # the demo: 8 samples, 3 layer samples
    recorded = load_fixture()
    layer, every = load_every_sample()
    assert layer == recorded.drift_origin.layer and len(every.samples) == recorded.samples == 8
    app = DriftApp(engine, result=recorded)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        text = " ".join(app.screen.text.split())
        assert "Per sample: 3 of 8 samples" in text and "compared on sample 0 and the worst outputs" in text
        assert "worst outputs · a: all 8" in text and len(_per_sample_lines(app)) == 3
        assert "no single channel stands out" in text and "1× the next" not in text   # bf16: every channel
        engine.drill_gate.clear()
        await pilot.press("a")
        await wait_until(pilot, lambda: engine.drills and "every sample, in the background" in app.screen.text)
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("end", "home")                       # the screen still answers meanwhile
        assert "every sample, in the background" in " ".join(app.screen.text.split())
        engine.drill_gate.set()
        await wait_until(pilot, lambda: "Per sample: all 8 samples" in app.screen.text)
        lines = _per_sample_lines(app)
        assert [int(l.split("#")[1].split()[0]) for l in lines] == list(range(8))
        worst = every.samples[every.sample_max_abs.index(max(every.sample_max_abs))]
        assert any(l.startswith(f"◆ sample #{worst}") and "← worst" in l for l in lines)
        assert "from one per-layer pass on each of the 8 samples" in " ".join(app.screen.text.split())
        await pilot.press("a")                                   # nothing more to compare
        await pilot.pause()
        assert len(engine.drills) == 1
        await pilot.press("escape", "enter")                     # kept for this result's layer
        await pilot.pause()
        assert "Per sample: all 8 samples" in app.screen.text and len(engine.drills) == 1
        await wait_until(pilot, lambda: not runner.alive_threads())


async def test_leaving_cancels_the_every_sample_pass_and_a_report_alone_says_what_it_needs():
    engine = ReplayEngine()
    engine.drill_gate.clear()
    app = DriftApp(engine, result=load_fixture())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter", "a")
        await wait_until(pilot, lambda: engine.drills)
        await pilot.press("escape")
        await pilot.pause()
        assert engine.drills[0][1].cancelled and not isinstance(app.screen, DetailScreen)
        engine.drill_gate.set()
        await wait_until(pilot, lambda: not runner.alive_threads())
    app = DriftApp(None, result=load_fixture())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter", "a")
        await pilot.pause()
        assert "Per sample: 3 of 8 samples" in " ".join(app.screen.text.split())
        assert any("needs the model" in str(n.message) for n in app._notifications)
