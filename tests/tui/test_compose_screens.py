"""The stage bisect (`b`, `drifttui tui MODEL --stages ...`) and the advised tolerance (`a`) in the
TUI (issue 32): the screens render what the real engine recorded (compose-bisect.json: the ResNet
example's raw export, then the file with one BatchNorm channel changed; compose-tolerance.json: its
noise floor); the replaying engine only times them (background, cancel, failure)."""
from __future__ import annotations

from drifttui.errors import ModelError
from drifttui.tui.app import DriftApp
from drifttui.tui.screens.detail import DetailScreen

from .conftest import wait_until
from .replay import ComposeReplay, load_compose

BISECT, TOLERANCE = load_compose("compose-bisect"), load_compose("compose-tolerance")
STAGES = ["raw.onnx", "bn-channel.onnx"]


def _body(app) -> str:
    return " ".join(app.screen.text.split())


async def _open(pilot, app, key: str, wanted: str) -> str:
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and wanted in _body(app))
    return _body(app)


async def test_bisect_names_the_first_stage_its_origin_and_cause():
    assert BISECT["first"] == 1 and BISECT["origin"]            # what the engine recorded
    engine = ComposeReplay("resnet18")
    app = DriftApp(engine, result=engine.recorded, stages=STAGES)
    async with app.run_test(size=(140, 40)) as pilot:
        body = await _open(pilot, app, "b", "first drifting stage: 1")
        assert BISECT["summary"].split(":")[0] in body
        assert f"origin: {BISECT['origin']}" in body
        for row in BISECT["stages"]:
            assert row["path"].rsplit("/", 1)[-1] in body
        assert ("DRIFT" in body or "OVER" in body) and "OK" in body
        if BISECT["cause"]:
            assert "cause:" in body
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("b")                          # shown again from the kept result, not recomputed
        await pilot.pause()
        assert "first drifting stage: 1" in _body(app)
    assert [k for k, _, _ in engine.compose_calls] == ["bisect"]


async def test_bisect_without_stages_says_how_to_give_them():
    engine = ComposeReplay("resnet18")
    app = DriftApp(engine, result=engine.recorded)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("b")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen) and not engine.compose_calls


async def test_bisect_runs_in_the_background_and_esc_cancels():
    engine = ComposeReplay("resnet18")
    engine.compose_gate.clear()
    app = DriftApp(engine, result=engine.recorded, stages=STAGES)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, app, "b", "bisecting the stages")
        await pilot.press("escape")                      # the UI answers while the engine works
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)
        await wait_until(pilot, lambda: engine.compose_calls and engine.compose_calls[-1][2].cancelled)


async def test_tolerance_advice_against_the_current_tolerance():
    adv = TOLERANCE["advice"]
    engine = ComposeReplay("resnet18")
    app = DriftApp(engine, result=engine.recorded)
    async with app.run_test(size=(140, 40)) as pilot:
        body = await _open(pilot, app, "a", "Noise floor per output")
        assert f"--atol {adv['atol']:g} --rtol {adv['rtol']:g}" in body
        assert "Noise floor per layer" in body and "current" in body and "advised" in body
        ratio = adv["current"]["rtol_over_floor"]
        if ratio is not None:
            assert f"is {ratio:.3g}x the noise floor here" in body
    assert engine.compose_calls[0][1] == engine.recorded.config


async def test_a_failing_composition_says_why_on_its_screen():
    engine = ComposeReplay("resnet18")
    engine.compose_fail = ModelError("ONNX Runtime cannot load stage 1", "check the file")
    app = DriftApp(engine, result=engine.recorded, stages=STAGES)
    async with app.run_test(size=(100, 30)) as pilot:
        body = await _open(pilot, app, "b", "failed")
        assert "Stage bisect failed: ONNX Runtime cannot load stage 1" in body


async def test_a_saved_report_has_no_engine_for_them():
    app = DriftApp(None, result=load_compose_free_result())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)


def load_compose_free_result():
    from .replay import load_fixture

    return load_fixture("resnet18")


async def test_a_running_composition_says_which_of_its_runs_the_samples_are_of():
    """(fourth pass) the noise floor's screen said "samples 20/20 per-layer pass…", not which of
    the 4 settings it was at."""
    engine = ComposeReplay("resnet18")
    engine.compose_gate.clear()
    app = DriftApp(engine, result=engine.recorded)
    async with app.run_test(size=(80, 24)) as pilot:
        body = await _open(pilot, app, "a", "samples 3/8")
        assert "tolerance: replaying (1/2) · samples 3/8" in body, body
        engine.compose_gate.set()
