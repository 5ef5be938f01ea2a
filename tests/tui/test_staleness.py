"""Step results follow the RESULT they ran on, not only its configuration (issue 23, item 2):
after `r` picks up an edited ONNX file (same configuration, now OK) the old step-3 hazard and
fix are marked stale; a rerun that gives the same numbers keeps them current."""
from __future__ import annotations

from dataclasses import replace

from drifttui.core.result import Summary
from tests.tui.replay import ReplayEngine, load_fixture
from drifttui.tui.app import DriftApp
from drifttui.tui.staleness import result_diff, result_key

from .conftest import CONFIG, screen_text, settle


def test_result_key_tells_results_apart():
    drift, ok = load_fixture(), load_fixture("resnet18")
    assert result_key(drift) == result_key(drift.with_(timings={}))      # timings are not the result
    assert result_diff(result_key(drift), result_key(ok)) == "an earlier result (DRIFT at layer3.1.bn1)"
    worse = drift.with_(outputs=[replace(o, metrics=replace(o.metrics, max_abs=Summary(9.0, 0, 9.0)))
                                 for o in drift.outputs])
    assert result_diff(result_key(drift), result_key(worse)) == "an earlier capture (its numbers differ)"


async def test_step_is_stale_after_a_rerun_changes_the_result():
    engine = ReplayEngine()
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        bar = app.steps_bar
        assert bar.steps[3].verdict == "fail" and not bar.stale(3)
        assert "stale" not in screen_text(app)
        engine.recorded = load_fixture("resnet18")       # the user fixed the ONNX file: now OK
        await pilot.press("r")
        await settle(app, pilot)
        assert app.result.verdict == "ok" and app.config == CONFIG      # same configuration
        assert "DRIFT at layer3.1.bn1" in bar.stale(3)
        shown = screen_text(app)
        assert "stale: ran on an earlier result (DRIFT at layer3.1.bn1)" in " ".join(shown.split())
        await pilot.press("s")
        await pilot.pause()
        assert "stale: this step ran on an earlier result" in " ".join(app.screen.text.split())


async def test_rerun_with_the_same_numbers_keeps_steps_current():
    engine = ReplayEngine()
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        assert len(engine.configs) == 2 and app.steps_bar.stale(3) == ""


def test_config_line_says_re_decided_with_the_captures_real_time(result):
    """(issue 23, item 8) the timings a re-decide writes (core/pipeline.py _finish)."""
    from drifttui.tui.widgets.status import run_time_text

    fresh = {**result.timings, "capture_time": 0.3, "prepare_time": 10.8}
    assert run_time_text(fresh) == f"{result.timings['total']:.1f}s"
    redecided = {**fresh, "capture_reused": 1.0, "prepare_reused": 1.0, "samples": 0.0, "total": 0.01}
    assert run_time_text(redecided) == "capture 0.3s reused, re-decided"
    recaptured = {**fresh, "prepare_reused": 1.0, "export": 0.0, "total": 0.4}
    assert run_time_text(recaptured) == "0.4s (export reused)"
    old = {k: v for k, v in result.timings.items() if k not in ("capture_time", "prepare_time")}   # an older report
    assert run_time_text({**old, "capture_reused": 1.0}) == "re-decided (capture reused)"
