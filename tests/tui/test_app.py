"""Pilot tests of the app on results recorded from the real engine (state assertions)."""
from __future__ import annotations


import pytest

from drifttui.core.result import DRIFT, INHERITED, UNATTRIBUTED
from tests.tui.replay import ReplayEngine as FakeEngine, load_fixture, tiled
from drifttui.tui.app import NO_ENGINE, DriftApp
from drifttui.tui.screens.error import ErrorScreen
from drifttui.tui.screens.help import HelpScreen

from .conftest import CONFIG, settle, wait_until


async def test_starts_run_and_cursor_on_origin(engine):
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert engine.configs == [CONFIG]
        assert app.result is not None
        assert app.table.cursor_layer == app.result.drift_origin.layer
        assert app.inspector.layer_index == app.result.drift_origin.layer


async def test_cursor_moves_update_inspector_and_g_returns(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        origin = result.drift_origin.layer
        await pilot.press("down", "j")
        await pilot.pause()
        assert app.table.cursor_layer == origin + 2
        assert app.inspector.layer_index == origin + 2
        await pilot.press("k", "up", "up")
        await pilot.pause()
        assert app.inspector.layer_index == origin - 1
        await pilot.press("home")
        await pilot.pause()
        assert app.table.cursor_layer == 0
        await pilot.press("g")
        await pilot.pause()
        assert app.table.cursor_layer == origin == app.inspector.layer_index


async def test_collapse_and_expand(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        origin = result.drift_origin.layer
        block = result.layers[origin].parent
        await pilot.press("left")            # leaf: go to parent
        await pilot.pause()
        assert app.table.cursor_layer == block
        await pilot.press("left")            # collapse the block
        await pilot.pause()
        tree = app.table.layer_tree
        assert block not in tree.expanded and tree.row_of(origin) is None
        assert len(tree.rows) < len(result.layers)
        await pilot.press("right")
        await pilot.pause()
        assert tree.row_of(origin) is not None
        await pilot.press("C")
        await pilot.pause()
        assert all(result.layers[i].depth <= 1 for i in tree.rows)
        await pilot.press("g")                # jumping reveals the origin again
        await pilot.pause()
        assert app.table.cursor_layer == origin
        await pilot.press("E")
        await pilot.pause()
        assert len(tree.rows) == len(result.layers)


async def test_filter_by_name_and_only_drift(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        await pilot.pause()
        assert app.focused is app.query_one("#filter")
        await pilot.press(*"relu")
        await pilot.pause()
        tree = app.table.layer_tree
        leaves = [i for i in tree.rows if not tree.children[i]]
        assert leaves and all(result.layers[i].module.endswith("relu") for i in leaves)
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is app.table and tree.filter_text == "relu"
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert tree.filter_text == "" and len(tree.rows) == len(result.layers)
        assert app.query_one("#filter-bar").has_class("hidden")
        await pilot.press("f")
        await pilot.pause()
        leaves = [i for i in tree.rows if not tree.children[i]]
        assert leaves and all(result.layers[i].status in (DRIFT, INHERITED, UNATTRIBUTED) for i in leaves)
        await pilot.press("f")
        await pilot.pause()
        assert len(tree.rows) == len(result.layers)


@pytest.mark.parametrize("number", [1, 2, 3, 4, 5, 6])
async def test_step_keys_run_steps(number, result):
    engine = FakeEngine()
    app = DriftApp(engine, result=result.with_(steps=[]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(str(number))
        await settle(app, pilot)
        bar = app.steps_bar
        assert engine.steps_run == [number]
        assert bar.selected == number and number in bar.steps
        assert bar.steps[number].step == number
        assert bar.steps[number].title.split()[0] in str(bar.render_text())


async def test_steps_next_previous_and_go_to_layers(result):
    app = DriftApp(None, result=result)          # steps come with the result (diagnose)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("home", "n", "n")
        await pilot.pause()
        assert app.steps_bar.selected == 2
        await pilot.press("home", "l")
        await pilot.pause()
        assert app.table.cursor_layer == result.steps[1].layers[0]
        await pilot.press("4", "l", "l")
        await pilot.pause()
        assert app.table.cursor_layer == result.steps[3].layers[1]
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("p", "p")
        await pilot.pause()
        assert app.steps_bar.selected == 1


async def test_determinism_toggle_reruns_and_status_shows_it(engine):
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        assert len(engine.configs) == 2 and engine.configs[-1].deterministic
        assert app.result.config.deterministic
        assert "det on" in str(app.status.render_text())
        await pilot.press("o", "plus")
        await settle(app, pilot)
        cfg = engine.configs[-1]
        assert cfg.opt_level == "basic" and cfg.atol == pytest.approx(1e-3) and cfg.deterministic
        assert engine.configs[-2].opt_level == "basic"     # `+` during the `o` run builds on it
        await pilot.press("minus", "minus", "z")
        await settle(app, pilot)
        cfg = app.config
        assert cfg.atol == pytest.approx(1e-5) and cfg.rtol == pytest.approx(1e-5) and cfg.zero_input
        assert "atol 1e-05" in str(app.status.render_text())


async def test_rerun_during_run_cancels_first():
    engine = FakeEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(engine.tokens) == 1)
        assert app.running and "samples 1/8" in str(app.status.render_text())
        await pilot.press("r")
        await wait_until(pilot, lambda: len(engine.tokens) == 2)
        assert engine.tokens[0].cancelled and not engine.tokens[1].cancelled
        engine.gate.set()
        await settle(app, pilot)
        assert not app.running and app.result is not None


async def test_cancel_key_stops_run():
    engine = FakeEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(engine.tokens) == 1)
        await pilot.press("x")
        await settle(app, pilot)
        assert engine.tokens[0].cancelled and not app.running
        assert "cancelled" in str(app.status.render_text())
        await wait_until(pilot, lambda: not __import__("drifttui.tui.runner", fromlist=["x"]).alive_threads())


async def test_engine_error_opens_modal_and_app_keeps_running(model_error):
    engine = FakeEngine(fail=model_error)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert app.screen.message == str(model_error)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        engine.fail = RuntimeError("boom")
        await pilot.press("r")
        await settle(app, pilot)
        assert isinstance(app.screen, ErrorScreen) and app.screen.message == "boom"
        await pilot.press("enter")
        engine.fail = None
        await pilot.press("r")
        await settle(app, pilot)
        # the app survived both failures: the rerun's result is on the main screen, no dialog left
        assert app.result is not None and app.return_code is None
        assert not isinstance(app.screen, ErrorScreen) and not app.running


async def test_browse_mode_rerun_says_a_model_is_needed(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        # at 80 columns the status line is cut (never wrapped onto the config line); the
        # notification says it in full
        assert "reruns need a model" in str(app.status.render_text())
        assert any(NO_ENGINE in n.message for n in app._notifications)
        assert app.result is result


async def test_layout_80x24_table_gets_the_height_and_inspector_toggle(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table, insp = app.table, app.inspector
        assert app.query_one("#main").has_class("narrow")
        assert not insp.region.height                        # hidden: the table gets the height
        assert table.region.height >= 16 and table.region.width == 80
        await pilot.press("i")
        await pilot.pause()
        assert insp.region.y >= table.region.bottom and insp.region.height >= 5   # below the table
        await pilot.press("i")
        await pilot.pause()
        assert not insp.region.height
        await pilot.resize_terminal(140, 40)
        await pilot.pause()
        assert not app.query_one("#main").has_class("narrow")
        assert not insp.region.height                        # the user's `i` choice is kept
        await pilot.press("i")
        await pilot.pause()
        assert insp.region.x >= table.region.right and insp.region.width >= 46   # beside the table



async def test_partial_results_and_help(result):
    engine = FakeEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.table.result is not None)
        await pilot.pause()
        assert app.result is None and app.table.result.samples == 1     # the recorded partial
        text = " ".join(app.inspector.text.split())
        assert "Metrics over 1 sample" in text and "the run is at 1/8" in text
        engine.gate.set()
        await settle(app, pilot)
        assert app.table.result is app.result
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_page_keys_on_ten_thousand_rows():
    big = tiled(load_fixture(), 134)
    assert len(big.layers) >= 10_000
    app = DriftApp(None, result=big)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        start = app.table.cursor
        await pilot.press("pagedown")
        await pilot.pause()
        assert app.table.cursor == start + app.table.page_height
        await pilot.press("end")
        await pilot.pause()
        assert app.table.cursor == len(big.layers) - 1
        assert app.table.scroll_y == app.table.max_scroll_y


async def test_inspector_shows_nodes_initializers_findings(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        origin = result.layers[result.drift_origin.layer]
        text = app.inspector.text
        assert origin.module in text
        # honest about the per-layer samples (the output pass covers all of them)
        assert f"Metrics over {origin.metrics.samples} samples of {result.samples}" in text
        assert "histogram" in text and "dtype" in text and "Findings" in text
        assert "Conv" in text and "Initializers (2)" in text and "running_var" in text
        assert "conv1.weight ← torch" in text and "kernel_shape=[3, 3]" in text
        cut = [line for line in text.splitlines() if "…" in line and "(<1e-9 … ≥1e1)" not in line]
        assert not cut, cut                       # nothing cut at 120x40 (Enter has the rest too)
        assert "std 0.05742" in text and "Δ torch" in text
        fused = next(l for l in result.layers if l.status == "fused")
        app.table.go_to_layer(fused.index)
        await pilot.pause()
        assert "no metrics for this module (fused)" in app.inspector.text
