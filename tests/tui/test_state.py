"""Honest state: the config line, step staleness, step progress/cancel, quitting, the root's
name, the status line at 80 columns, the filter's cursor and "no rows match"."""
from __future__ import annotations

import time

from tests.tui.replay import ReplayEngine
from drifttui.tui import runner
from drifttui.tui.app import DriftApp

from .conftest import CONFIG, DEMO, screen_text, settle, wait_until


async def test_cancelled_rerun_leaves_config_line_on_the_result_and_next_o_continues_from_it():
    engine = ReplayEngine()
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        engine.gate.clear()
        await pilot.press("o")                       # disable -> basic, blocked
        await wait_until(pilot, lambda: len(engine.tokens) == 2)
        status = str(app.status.render_text())
        assert "opt disable" in status and "→ opt basic" in status   # shown result + the pending change
        await pilot.press("x")
        await pilot.pause()
        assert not app.running and app.config.opt_level == "disable" == app.result.config.opt_level
        assert "opt disable" in str(app.status.render_text())
        engine.gate.set()
        await pilot.press("o")
        await settle(app, pilot)
        assert engine.configs[-1].opt_level == "basic"          # not "extended"
        assert app.result.config.opt_level == "basic" and "opt basic" in str(app.status.render_text())


async def test_step_results_kept_across_reruns_and_marked_stale():
    engine = ReplayEngine()
    app = DriftApp(engine, result=DEMO.with_(steps=[]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await settle(app, pilot)
        bar = app.steps_bar
        assert 3 in bar.steps and not bar.stale(3)
        await pilot.press("d")                      # rerun with determinism on
        await settle(app, pilot)
        assert app.result.config.deterministic
        assert 3 in bar.steps and bar.stale(3) == "det off"
        text = str(bar.render_text())
        assert "stale: ran on det off" in text
        await pilot.press("3")                      # the shown step again: reruns it
        await settle(app, pilot)
        assert engine.steps_run == [3, 3] and not bar.stale(3)


async def test_step_progress_shown_and_x_cancels_a_step():
    engine = ReplayEngine(step_block=True)
    app = DriftApp(engine, result=DEMO.with_(steps=[]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await wait_until(pilot, lambda: 5 in app.steps_bar.progress)
        text = str(app.steps_bar.render_text())
        assert "step 5 running 2/3 replaying" in text and "x cancels" in text      # the 2nd of 3 runs
        await pilot.press("x")
        await pilot.pause()
        assert not app.steps_bar.running and "step 5 cancelled" in str(app.steps_bar.render_text())
        await wait_until(pilot, lambda: not runner.alive_threads())
        assert 5 not in app.steps_bar.steps


async def test_q_quits_at_once_during_a_rerun():
    engine = ReplayEngine(block=True)        # a run that never ends by itself
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(engine.tokens) == 1)
        start = time.monotonic()
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running, 3)
        took = time.monotonic() - start
        assert app.return_code == 0
    assert took < 3                          # the app side; scripts/tmux_check.py times the process
    assert engine.tokens[0].cancelled


async def test_ctrl_c_quits_like_q():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


async def test_root_is_named_root_everywhere():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("home")
        await pilot.pause()
        assert "(root)" in app.inspector.text
        assert "(root)" in screen_text(app)
        assert "<root>" not in screen_text(app)


async def test_status_line_says_progress_once_and_never_wraps_at_80():
    engine = ReplayEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.table.result is not None)
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert "samples 1/8" in lines[0] and lines[0].count("1/8") == 1
        assert lines[1].lstrip().startswith("opt disable")        # config line still on screen
        assert app.status.region.height == 2
        engine.gate.set()
        await settle(app, pilot)


async def test_filter_no_rows_match_and_clearing_keeps_the_cursor_place():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        origin = DEMO.drift_origin.layer
        assert app.table.cursor_layer == origin
        await pilot.press("slash", *"zzz")
        await pilot.pause()
        assert "no rows match 'zzz'" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.table.cursor_layer == origin            # back where it was


async def test_cursor_row_highlight_has_no_hole():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.table
        strip = table.render_line(table.cursor - round(table.scroll_y) + 1)
        backgrounds = {seg.style.bgcolor for seg in strip if seg.style is not None and seg.text.strip()}
        assert len(backgrounds) == 1, backgrounds
