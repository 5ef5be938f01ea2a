"""The served model in the TUI (issue 31 point 6) on results the real engine recorded
(scripts/record_served_fixtures.py): ``served-live`` (a batch-dependent model behind a real PyTriton
server with dynamic batching: served ≠ file, batch dependence) and ``served-repo`` (a model repository
whose config asks for TensorRT FP16 / OpenVINO, with a batch sweep)."""
from __future__ import annotations

from drifttui.tui.app import DriftApp
from drifttui.tui.screens.detail import DetailScreen

from .conftest import screen_text, wait_until
from .replay import ReplayEngine, load_fixture

LIVE, REPO = load_fixture("served-live"), load_fixture("served-repo")


def _root(app) -> int:
    return next(i for i, layer in enumerate(app.table.result.layers) if layer.parent is None)


async def test_live_verdict_in_the_status_and_outputs_side_by_side():
    s = LIVE.served
    assert s.verdict == "differs" and s.reason == "batch dependence"       # what the engine recorded
    app = DriftApp(None, result=LIVE)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        first = app.status.first_line().plain
        assert "served ≠ file: batch dependence" in first
        cost = sum(LIVE.timings[k] for k in ("served_reference", "served_requests", "batch_sweep") if k in LIVE.timings)
        assert f"served requests {LIVE.timings['served_requests']:.1f}s" in app.status.second_line(160).plain
        assert f"served {cost:.1f}s" in app.status.second_line(110).plain       # the served run's cost, summed
        app.table.go_to_layer(_root(app))
        await wait_until(pilot, lambda: "Served model (Triton)" in app.inspector.text)
        text = app.inspector.text
        assert "Served model (Triton)" in text and "file, ORT here" in text and "served, 1 by 1" in text
        out = s.outputs[0]
        assert f"{100 * out.top1_vs_torch:.1f}%" in text and f"{100 * out.batched_top1_vs_torch:.1f}%" in text
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        body = " ".join(app.screen.text.split())
        assert "served ≠ file: batch dependence" in body and "served, batched" in body and "served, 1 by 1" in body
        assert f"sequential: {s.runs[0].requests} requests" in body
        assert f"{100 * s.outputs[0].batched_top1_vs_torch:.2f}%" in body
        assert "served requests" in body                                    # the itemised cost
        assert "config fields that changed the run" in body
        assert f"first layer: #{LIVE.batch_sweep.first_layer}" in body
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)


async def test_batch_sweep_figure_on_the_first_dependent_layer():
    sweep = LIVE.batch_sweep
    app = DriftApp(None, result=LIVE)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert app.table.go_to_layer(sweep.first_layer)
        await wait_until(pilot, lambda: app.inspector.layer_index == sweep.first_layer)
        text = " ".join(app.inspector.text.split())
        assert "batch sweep: max |alone - batched|" in text
        assert "the first layer that depends on the batch" in text


async def test_repository_run_names_the_fields_and_what_is_not_reproduced():
    s = REPO.served
    assert s.source == "repository" and s.unreproducible and not s.outputs
    app = DriftApp(None, result=REPO)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        first = app.status.first_line().plain
        assert "served: repository (not compared live)" in first and "(not reproduced here)" in first
        assert "batch invariant" in first
        app.table.go_to_layer(_root(app))
        await wait_until(pilot, lambda: "Served model (Triton)" in app.inspector.text)
        text = " ".join(app.inspector.text.split())
        assert "not reproduced here (the served numbers may differ)" in text
        assert "TensorRT" in text
        for field in s.config_fields:
            assert " ".join(field.split())[:40] in text
        await pilot.press("v")
        await pilot.pause()
        body = " ".join(app.screen.text.split())
        assert "repository only" in body and "batch invariant" in body and "file, ORT here" in body


async def test_a_run_without_served_model_shows_the_outputs_and_says_how():
    app = DriftApp(None, result=load_fixture())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert "⇄" not in app.status.first_line().plain
        await pilot.press("v")
        await pilot.pause()
        body = " ".join(app.screen.text.split())
        assert "file, ORT here" in body and "no served model in this run" in body


async def test_served_run_goes_through_the_engine_and_shows_its_progress():
    """A served config runs in the background like any rerun: the progress line says the served stage."""
    engine = ReplayEngine("served-live", block=True)
    app = DriftApp(engine, config=LIVE.config)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: engine.started.is_set())
        assert engine.configs[-1].triton_url == LIVE.config.triton_url
        engine.gate.set()
        await wait_until(pilot, lambda: app.result is not None)
        await pilot.pause()
        assert "served ≠ file" in screen_text(app)
