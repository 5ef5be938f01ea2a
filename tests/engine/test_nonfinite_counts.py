"""An error that is inf or NaN says how many elements made it so (issue 30 point 1): the headline's origin
numbers (text, summary lines, HTML) and step 4's sweep lines give the count of elements inf/NaN on one side only,
and say nothing more when there is none."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from rich.console import Console

from drifttui.core.result import Result, Step
from drifttui.report.html import render as render_html
from drifttui.report.steps_text import _evidence_lines
from drifttui.report.summary import origin_numbers
from drifttui.report.text import render

FIXTURE = Path(__file__).parents[1] / "tui" / "fixtures" / "resnet18-bf16.json"


def render_text(r: Result) -> str:
    console = Console(width=400, record=True)
    console.print(render(r, width=400))
    return console.export_text()


def _result(nonfinite: int) -> Result:
    r = Result.from_dict(json.loads(FIXTURE.read_text()))
    o = r.drift_origin
    layers = list(r.layers)
    L = layers[o.layer]
    metrics = dataclasses.replace(L.metrics, nan_mismatch=nonfinite)
    local = dataclasses.replace(L.local, nan_mismatch=max(0, nonfinite - 1)) if L.local else None
    layers[o.layer] = dataclasses.replace(L, metrics=metrics, local=local)
    inf = math.inf if nonfinite else o.max_abs
    return r.with_(layers=layers, drift_origin=dataclasses.replace(o, max_abs=inf, local_max_abs=inf))


def test_the_origin_numbers_count_the_elements_inf_or_nan_on_one_side():
    r = _result(23)
    said = "max |d| inf (23 element(s) inf/NaN on one side only)"
    assert said in origin_numbers(r)
    assert "own error inf (22 element(s) inf/NaN on one side only)" in origin_numbers(r)
    assert said in render_text(r)
    assert said in render_html(r)


def test_a_finite_origin_says_no_count():
    r = _result(0)
    assert "inf/NaN" not in origin_numbers(r) and "inf/NaN" not in render_text(r)


def test_step_4_s_sweep_lines_count_them():
    rows = [{"tolerance": 1e-3, "verdict": "drift", "origin": "calib", "origin_layer": 3, "origin_max_abs": math.inf,
             "origin_nonfinite": 14, "drifting_layers": 1},
            {"tolerance": 1e-4, "verdict": "drift", "origin": "calib", "origin_layer": 3, "origin_max_abs": 0.5,
             "drifting_layers": 1}]
    lines = _evidence_lines(Step(4, "Tolerance bisect", "pass", "", {"sweep": rows}, ""))
    assert lines[0] == "tol 0.001: calib max_abs=inf (14 element(s) inf/NaN on one side only)", lines
    assert lines[1] == "tol 0.0001: calib max_abs=5.00e-01", lines
