"""`drifttui diagnose` end to end, the text report, and run_step from a result alone."""
from __future__ import annotations

import json

from rich.console import Console

from drifttui import cli
from drifttui.core.pipeline import Pipeline
from drifttui.report.steps_text import render_steps


def test_diagnose_cli_example_json(tmp_path, capsys):
    out = tmp_path / "report.json"
    code = cli.main(["diagnose", "--example", "unet-resize", "--samples", "2", "--json", str(out)])
    assert code == 1
    data = json.loads(out.read_text())
    assert [s["step"] for s in data["steps"]] == [1, 2, 3, 4, 5, 6]
    for s in data["steps"]:
        assert set(s) == {"step", "title", "verdict", "summary", "evidence", "suggestion", "layers"}
    err = [f for f in data["findings"] if f["severity"] == "error"]
    assert (err[0]["check"], err[0]["module"]) == ("interpolation", "up1")
    printed = capsys.readouterr().out
    assert "Debugging steps" in printed and "interpolation" in printed


def test_diagnose_single_step_to_stdout(variant_path, capsys):
    from tests.steps.conftest import INPUTS, MODEL

    code = cli.main(["diagnose", MODEL, "--onnx", variant_path("eps"), "--inputs", INPUTS, "--samples", "2",
                     "--step", "6", "--json", "-"])
    assert code == 1
    data = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in data["steps"]] == [6]
    assert any(f["check"] == "normalization" and f["severity"] == "error" for f in data["findings"])


def test_text_report_renders(diagnosed):
    console = Console(width=100, record=True)
    console.print(render_steps(diagnosed("twodrift")))
    text = console.export_text()
    for n in range(1, 7):
        assert f" {n}. " in text
    assert "tol 1e-05: bn" in text and "Findings" in text


def test_run_step_from_result_alone(run):
    """A result without its run (a loaded report): the engine prepares once from its config, and a
    second step on the same result reuses that preparation and context (no rebuild)."""
    _, result = run("resize")
    engine = Pipeline()
    seen = []
    s = engine.step(3, result, progress=seen.append)
    assert s.step == 3 and s.verdict == "fail" and s.layers == [result.drift_origin.layer]
    rebuilt = [p for p in seen if p.stage == "step" and "preparing the model again" in p.message]
    assert len(rebuilt) == 1
    prepared, ctx = engine.context(result).prepared, engine.context(result)
    seen_again = []
    again = engine.step(3, result, progress=seen_again.append)          # cached context: no rebuild
    assert again.summary == s.summary
    assert not [p for p in seen_again if "preparing the model again" in p.message]
    assert engine.context(result) is ctx and ctx.prepared is prepared


def test_the_ort_levels_line_says_how_many_samples_its_figures_are_over():
    """(fourth pass) `ORT levels: disable: out 1.4e+00` under a report whose output max |d| is 2.08:
    the sweep's figures are over its first 2 samples, and the line did not say so."""
    from drifttui.report.steps_text import _node_lines

    ev = {"opt_levels": {"samples": 2, "fused_op_types": [],
                         "levels": {"disable": {"final_max_abs": 1.4, "origin_max_abs": 3.0}}},
          "hazards": [], "initializers": []}
    line = next(x for x in _node_lines(ev) if x.startswith("ORT levels"))
    assert line.startswith("ORT levels (max |d| on 2 samples): disable: out 1.4e+00 origin 3.0e+00"), line
