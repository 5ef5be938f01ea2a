"""Lines of the text report the new-user review of session 36 found wanting: the unmapped calls named under the
coverage line ("1 unmapped" alone could not be found in the table), escaped like every name from a model, the rest
left to the JSON; a finding whose patch was proposed but never run says so (not "no patch could be tried")."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from drifttui.report import json_report
from drifttui.report.text import UNMAPPED_SAID, render

FIXTURE = Path(__file__).resolve().parents[1] / "tui" / "fixtures" / "transformer-ln-eps.json"


def _text(result) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(render(result, width=160))
    return console.export_text()


def test_unmapped_calls_are_named_with_why_and_escaped():
    result = json_report.read(str(FIXTURE))          # a result the real engine produced
    layers = list(result.layers)
    evil = "layers.0.norm1\x1b[31m"
    layers[3] = dataclasses.replace(layers[3], module=evil, status="unmapped",
                                    note="none of their outputs matches the module's output shape/dtype")
    text = _text(result.with_(layers=layers))
    line = next(line for line in text.splitlines() if line.strip().startswith("unmapped:"))
    assert "layers.0.norm1\\x1b[31m (LayerNorm): none of their outputs matches" in line
    assert "\x1b" not in text


def test_many_unmapped_calls_name_the_first_few_and_count_the_rest():
    result = json_report.read(str(FIXTURE))
    layers = [dataclasses.replace(L, status="unmapped") if 2 <= L.index < 8 else L for L in result.layers]
    line = next(line for line in _text(result.with_(layers=layers)).splitlines() if "unmapped:" in line)
    assert line.count("(") - line.count("(in the JSON") >= UNMAPPED_SAID
    assert f"and {6 - UNMAPPED_SAID} more (in the JSON report)" in line


def test_no_unmapped_call_no_line():
    assert "unmapped:" not in _text(json_report.read(str(FIXTURE)))


def test_a_finding_whose_patch_was_never_run_says_so_not_that_none_could_be_tried():
    from drifttui.core.result import Finding
    from drifttui.report.steps_text import verification_line

    f = Finding("normalization", "error", "blocks.1.norm", ["node_add"], "eps", {}, "fix", None,
                {"op": "replace_constant", "node": "node_add", "value": 1e-6})
    line = verification_line(f)
    assert "[replace_constant node_add] was not tried" in line and "no patch could be tried" not in line


def test_a_passing_files_warning_is_a_finding_not_a_cause_in_markdown():
    from drifttui.core.result import Finding
    from drifttui.report import markdown
    from drifttui.report.gate import decide

    result = json_report.read(str(FIXTURE.with_name("served-repo.json")))      # a clean run of the real engine
    assert result.verdict == "ok"
    warned = result.with_(findings=[Finding("dtype", "warning", "0", [], "36 alike: initializer is stored as "
                                            "float16", {}, "export in float32")])
    md = markdown.render(warned, decide(warned))
    assert "**Finding:** 36 alike" in md and "**Cause:**" not in md
