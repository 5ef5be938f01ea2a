"""Pilot tests of the app with a fake engine (state assertions)."""
from __future__ import annotations


import pytest

from drifttui.core.result import DRIFT, INHERITED
from drifttui.tui.app import NO_ENGINE, DriftApp
from drifttui.tui.screens.error import ErrorScreen
from drifttui.tui.screens.help import HelpScreen

from .conftest import CONFIG, FakeEngine


async def settle(app, pilot):
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def wait_until(pilot, cond, timeout=3.0):
    for _ in range(int(timeout / 0.01)):
        if cond():
            return
        await pilot.pause(0.01)
    raise AssertionError("condition not met")


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
        await pilot.press(*"attn")
        await pilot.pause()
        tree = app.table.layer_tree
        leaves = [i for i in tree.rows if not tree.children[i]]
        assert leaves and all(result.layers[i].module.endswith("attn") for i in leaves)
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is app.table and tree.filter_text == "attn"
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert tree.filter_text == "" and len(tree.rows) == len(result.layers)
        assert app.query_one("#filter").has_class("hidden")
        await pilot.press("f")
        await pilot.pause()
        leaves = [i for i in tree.rows if not tree.children[i]]
        assert leaves and all(result.layers[i].status in (DRIFT, INHERITED) for i in leaves)
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
    app = DriftApp(None, result=result)          # steps come with the result
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("home", "n", "n")
        await pilot.pause()
        assert app.steps_bar.selected == 2
        await pilot.press("l")
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


async def test_step_not_available_yet(result):
    engine = FakeEngine(unavailable_steps=(4,))
    app = DriftApp(engine, result=result.with_(steps=[]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        assert "step 4 not available yet" in str(app.steps_bar.render_text())
        assert not isinstance(app.screen, ErrorScreen)


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
        assert app.running and "samples 0/20" in str(app.status.render_text())
        await pilot.press("r")
        await wait_until(pilot, lambda: len(engine.tokens) == 2)
        assert engine.tokens[0].cancelled and not engine.tokens[1].cancelled
        engine.gate.set()
        await settle(app, pilot)
        assert not app.running and app.result is not None
        assert app.run_tokens == engine.tokens


async def test_cancel_key_stops_run():
    engine = FakeEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(engine.tokens) == 1)
        await pilot.press("x")
        await settle(app, pilot)
        assert engine.tokens[0].cancelled and not app.running
        assert "cancelled" in str(app.status.render_text())


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
        assert app.result is not None and app.is_running


async def test_browse_mode_rerun_says_a_model_is_needed(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert NO_ENGINE in str(app.status.render_text())
        assert app.result is result


async def test_layout_80x24_and_inspector_toggle(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table, insp = app.table, app.inspector
        assert app.query_one("#main").has_class("narrow")
        assert insp.region.y >= table.region.bottom          # inspector below the table
        assert table.region.height >= 6 and insp.region.height >= 5
        assert table.region.width == 80
        await pilot.press("i")
        await pilot.pause()
        assert insp.display is False or not insp.region.height
        await pilot.resize_terminal(140, 40)
        await pilot.press("i")
        await pilot.pause()
        assert not app.query_one("#main").has_class("narrow")
        assert insp.region.x >= table.region.right           # inspector beside the table


async def test_partial_results_and_help(result):
    engine = FakeEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(engine.tokens) == 1)
        assert app.table.result is None
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
    from drifttui.testing.synthetic import synthetic_result

    big = synthetic_result(10_000, steps=False, findings=False)
    app = DriftApp(None, result=big)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        start = app.table.cursor
        await pilot.press("pagedown")
        await pilot.pause()
        assert app.table.cursor == start + app.table.page_height
        await pilot.press("end")
        await pilot.pause()
        assert app.table.cursor == 9_999
        assert app.table.scroll_y == app.table.max_scroll_y


async def test_inspector_shows_nodes_initializers_findings(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        origin = result.layers[result.drift_origin.layer]
        text = app.inspector.text
        assert origin.module in text and "Metrics over 20 samples" in text
        assert "histogram" in text and "bf16-weights" in text and "Findings" in text
        assert "Conv" in text and "Initializers (2)" in text and "running_var" in text
        attn = next(l for l in result.layers if l.module.endswith("block2.attn"))
        app.table.go_to_layer(attn.index)
        await pilot.pause()
        text = app.inspector.text
        assert f"Initializers ({len(attn.initializers)})" in text
        assert "q_proj.weight ← torch" in text and "Softmax" in text and "axis=-1" in text
        fused = next(l for l in result.layers if l.status == "fused")
        app.table.go_to_layer(fused.index)
        await pilot.pause()
        assert "no metrics for this module (fused)" in app.inspector.text
