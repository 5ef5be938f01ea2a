"""Defects of the fourth new-user pass (issue 35) that show in the TUI."""
from __future__ import annotations

import pytest

from drifttui.core.base.progress import Progress
from drifttui.tui.widgets.steps_bar import StepsBar


def test_a_running_step_says_its_number_once():
    """`step 5 running step 5: rerunning the check ...`: the engine's message starts with the step."""
    bar = StepsBar()
    bar.selected = 5
    bar.running.add(5)
    bar.set_progress(5, Progress("step", message="step 5: rerunning the check with deterministic=False and True"))
    text = str(bar.render_text())
    assert "step 5 running" in text and text.count("step 5") == 1, text
    assert "rerunning the check with deterministic=False and True" in text


def test_the_metrics_threshold_of_max_abs_is_the_rule_at_the_layers_scale():
    """The drill-down strip said "against its tolerance (6e-03)" and the metrics table below it
    "max abs ... threshold 1.00e-04" (atol alone) for the demo's origin."""
    from drifttui.report.profile import allowance
    from drifttui.tui.layer_view import metrics_table
    from tests.tui.replay import load_fixture

    result = load_fixture("resnet18-bf16")
    origin = next(L for L in result.layers if L.index == result.drift_origin.layer)
    allowed = allowance(result, origin)
    assert allowed > 10 * result.tolerance.atol           # the scale matters here
    row = next(line for line in str(metrics_table(origin.metrics, origin.local, result, origin)).splitlines()
               if line.startswith("max abs"))
    assert float(row.split()[-1]) == pytest.approx(allowed, rel=1e-3), row


async def test_a_collapsed_module_holding_the_origin_is_marked():
    """`C` collapsed layer3 (the demo's origin is layer3.1.bn1): its row showed no mark at all."""
    from drifttui.tui.app import DriftApp
    from tests.tui.conftest import screen_text
    from tests.tui.replay import load_fixture

    app = DriftApp(None, result=load_fixture("resnet18-bf16"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("C")
        await pilot.pause()
        rows = [line for line in screen_text(app).splitlines() if "Sequential" in line]
        marked = [line for line in rows if line.startswith("◇")]
        assert len(marked) == 1 and "layer3" in marked[0], rows
        assert not any(line.startswith("◆") for line in screen_text(app).splitlines())


def test_the_worst_sample_in_the_head_says_it_is_of_the_layer_samples():
    """After `a` the every-sample list named #3 the worst while the head still said "worst sample
    #17": that one is the worst of the 3 samples compared layer by layer, and says so."""
    from drifttui.tui.layer_view import _quick_line
    from tests.tui.replay import load_fixture

    result = load_fixture("resnet18-bf16")
    origin = next(L for L in result.layers if L.index == result.drift_origin.layer)
    assert origin.metrics.samples < result.samples
    line = str(_quick_line(result, origin))
    assert f"worst sample #{origin.metrics.max_abs.worst_sample} of {origin.metrics.samples} compared" in line


async def test_x_with_nothing_running_says_so_for_a_moment_not_in_the_status_line():
    """`x` with nothing running left "nothing is running" beside the verdict until the next action."""
    from drifttui.tui.app import DriftApp
    from tests.tui.replay import load_fixture

    app = DriftApp(None, result=load_fixture("resnet18-bf16"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        assert "nothing is running" not in str(app.status.render_text())
        assert any("nothing is running" in str(n.message) for n in app._notifications)
