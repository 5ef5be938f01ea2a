"""Defects of the fourth new-user pass (issue 35) that show in the TUI."""
from __future__ import annotations

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
