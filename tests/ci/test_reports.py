"""--junit, --markdown, --gitlab and GitHub annotations, on real runs of the built-in examples."""
from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET

from drifttui.report import json_report
from drifttui.report.ci_outputs import CiRun
from tests.ci.conftest import github_actions, run_cli


def _suite(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    return root, suites[0]


def test_junit_failure_count_matches_a_drift(unet_drift):
    assert unet_drift.code == 1
    root, suite = _suite(unet_drift.files["xml"])
    cases = suite.findall("testcase")
    result = json_report.read(str(unet_drift.files["json"]))
    assert len(cases) == len(result.outputs) + 1        # a case per output + the per-layer verdict
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("failures")) == len(failures) == int(root.get("failures")) >= 1
    assert int(suite.get("tests")) == len(cases)
    layer = next(c for c in cases if c.get("name") == "per-layer verdict")
    message = layer.find("failure").get("message")
    assert "up1" in message and "Upsample" in message and "Resize" in message and "max |d|" in message
    assert "node_upsample_bilinear2d" in message


def test_junit_has_no_failure_without_drift(unet_clean):
    assert unet_clean.code == 0
    root, suite = _suite(unet_clean.files["xml"])
    assert suite.get("failures") == "0" and root.get("failures") == "0"
    assert not suite.findall("testcase/failure")
    names = [c.get("name") for c in suite.findall("testcase")]
    assert "per-layer verdict" in names and any(n.startswith("output ") for n in names)


def test_markdown_names_the_origin_and_its_neighbours(unet_drift, unet_clean):
    text = unet_drift.files["md"].read_text()
    assert text.startswith("### ❌ drifttui: drift at up1 (Upsample)")
    assert "**Origin:** up1 (Upsample; ONNX Resize" in text
    assert "| 8 | **`up1`** | Upsample | Resize | drift |" in text     # the origin row, highlighted
    assert "| 9 | `dec1` |" in text                                    # a layer after it
    assert "#### Outputs" in text and "**Coverage:** 13 module calls" in text
    clean = unet_clean.files["md"].read_text()
    assert clean.startswith("### ✅ drifttui: no drift, gate passes") and "Origin" not in clean


def test_gitlab_code_quality_report(unet_drift, unet_clean):
    issues = json.loads(unet_drift.files["gitlab"].read_text())
    assert len(issues) == 1
    issue = issues[0]
    assert issue["severity"] == "critical" and issue["check_name"] == "drifttui/drift"
    assert "up1" in issue["description"] and len(issue["fingerprint"]) == 64
    assert issue["location"]["path"] and issue["location"]["lines"]["begin"] == 1
    assert json.loads(unet_clean.files["gitlab"].read_text()) == []


def _finish(json_path, actions, capsys):
    args = argparse.Namespace(junit=None, markdown=None, gitlab=None, json=None, fail_on="drift",
                              min_top1=None, baseline=None)
    ci = CiRun.prepare(args, [])
    result = json_report.read(str(json_path))
    with github_actions(actions):
        code = ci.finish(result)
    return code, capsys.readouterr().out


def test_annotations_only_under_github_actions(unet_drift, unet_clean, capsys):
    assert "::error" not in unet_drift.out and "::warning" not in unet_drift.out   # the CLI run had no GITHUB_ACTIONS
    code, out = _finish(unet_drift.files["json"], None, capsys)
    assert code == 1 and "::" not in out
    code, out = _finish(unet_drift.files["json"], "false", capsys)
    assert "::" not in out
    code, out = _finish(unet_drift.files["json"], "true", capsys)
    lines = [line for line in out.splitlines() if line.startswith("::")]
    assert len(lines) == 1
    assert lines[0].startswith("::error title=drifttui%3A drift at up1 (Upsample)::up1 (Upsample; ONNX Resize")
    code, out = _finish(unet_clean.files["json"], "true", capsys)
    assert code == 0 and "::" not in out


def test_annotations_escape_newlines_and_go_to_stderr_with_json_on_stdout(unet_drift):
    from dataclasses import replace

    from drifttui.core.result import Finding
    from drifttui.report.annotations import github
    from drifttui.report.gate import decide

    result = json_report.read(str(unet_drift.files["json"]))
    finding = Finding("interpolation", "error", "up1", ["node_upsample_bilinear2d"], "Resize mode 100%\nwrong",
                      {}, "re-export", verified=True, local_before=3.0, local_after=1e-7, kind="export")
    result = replace(result, findings=[finding])
    lines = github(result, decide(result))
    assert all("\n" not in line for line in lines)
    # a line break inside a sentence (it can only come from a name) is shown, not kept (issue 22)
    assert any("cause: interpolation at up1: Resize mode 100%25\\x0awrong" in line for line in lines)
    assert any(line.startswith("::error title=drifttui interpolation at up1::") for line in lines)
    run = run_cli(["check", "--example", "unet-resize", "--samples", "1", "--json", "-"], actions="true")
    assert run.code == 1
    json.loads(run.out)                                  # stdout stays valid JSON
    assert "::error title=drifttui%3A drift at up1" in run.err


def test_report_paths_are_checked_before_the_run(tmp_path, variants):
    from tests.ci.conftest import MODEL, classifier_args

    model_file = MODEL.rsplit(":", 1)[0]
    source = open(model_file).read()
    run = run_cli(classifier_args(variants, "clean", "--junit", model_file))
    assert run.code == 2 and "is an input of this run" in run.err and len(run.err.strip().splitlines()) == 1
    assert open(model_file).read() == source
    run = run_cli(classifier_args(variants, "clean", "--markdown", str(tmp_path / "missing" / "s.md")))
    assert run.code == 2 and "does not exist" in run.err
    run = run_cli(classifier_args(variants, "clean", "--junit", str(tmp_path / "a"), "--markdown", str(tmp_path / "a")))
    assert run.code == 2 and "same file" in run.err
    baseline = tmp_path / "base.json"
    baseline.write_text("{}")
    run = run_cli(classifier_args(variants, "clean", "--baseline", str(baseline), "--json", str(baseline)))
    assert run.code == 2 and "is an input of this run" in run.err and baseline.read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.json"]     # nothing half-written


def test_junit_and_markdown_carry_the_headline_cause_and_fix(unet_drift):
    from dataclasses import replace

    from drifttui.core.result import Finding
    from drifttui.report import junit, markdown
    from drifttui.report.gate import decide

    result = json_report.read(str(unet_drift.files["json"]))
    cause = Finding("interpolation", "error", "up1", ["node_upsample_bilinear2d"],
                    "Resize uses coordinate_transformation_mode=asymmetric", {},
                    "re-export with align_corners=False semantics (half_pixel)", verified=True,
                    local_before=3.01, local_after=2e-7, kind="export")
    warning = Finding("dtype", "warning", "enc1", [], "a float16 constant", {}, "cast")
    result = replace(result, findings=[cause, warning])
    decision = decide(result)
    root = ET.fromstring(junit.render(result, decision, command="diagnose"))
    suite = root.find("testsuite")
    failures = suite.findall("testcase/failure")
    assert int(suite.get("failures")) == len(failures) == len(result.outputs) + 2   # outputs, verdict, 1 error finding
    layer = next(c for c in suite.findall("testcase") if c.get("name") == "per-layer verdict")
    message = layer.find("failure").get("message")
    assert "cause: interpolation at up1: Resize uses coordinate_transformation_mode=asymmetric" in message
    assert "verified: the patch brings the origin's own error from 3.01e+00 to 2.00e-07" in message
    assert "fix: re-export with align_corners=False semantics" in message
    assert any(c.get("name") == "interpolation at up1" for c in suite.findall("testcase"))
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown.render(result, decision))
    assert ("<strong>Cause:</strong> Resize uses coordinate_transformation_mode=asymmetric "
            "(interpolation, export)") in html
    assert "<strong>Fix:</strong> re-export with align_corners=False semantics (half_pixel)" in html


def test_diagnose_writes_the_cause_into_the_reports(variants, tmp_path):
    from tests.ci.conftest import classifier_args

    xml, md = tmp_path / "j.xml", tmp_path / "s.md"
    run = run_cli(classifier_args(variants, "flip", "--step", "1", "--junit", str(xml), "--markdown", str(md),
                                  command="diagnose"))
    assert run.code == 1
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("name").startswith("drifttui diagnose: ")
    layer = next(c for c in suite.findall("testcase") if c.get("name") == "per-layer verdict")
    message = layer.find("failure").get("message")
    assert message.startswith("drift at fc2 (Linear; ONNX Gemm")
    assert "cause: weights at fc2: initializer fc2.bias differs from" in message and "verified" in message
    assert "**Cause:** initializer fc2.bias differs from" in md.read_text()


def test_reports_never_overwrite_the_onnx_file(variants):
    from tests.ci.conftest import classifier_args

    before = open(variants["clean"], "rb").read()
    for flag in ("--junit", "--markdown", "--gitlab"):
        run = run_cli(classifier_args(variants, "clean", flag, variants["clean"]))
        assert run.code == 2 and f"{flag} {variants['clean']!r} is an input of this run" in run.err
    assert open(variants["clean"], "rb").read() == before


def test_a_failing_run_still_writes_complete_reports(variants, tmp_path):
    from tests.ci.conftest import MODEL

    xml, md, gl = tmp_path / "j.xml", tmp_path / "s.md", tmp_path / "g.json"
    run = run_cli(["check", MODEL, "--onnx", variants["clean"], "--inputs", "shape:3x16", "--samples", "1",
                   "--junit", str(xml), "--markdown", str(md), "--gitlab", str(gl)], actions="true")
    assert run.code == 2 and len(run.err.strip().splitlines()) == 1      # the one-line error stays one line
    root = ET.parse(xml).getroot()
    assert root.get("errors") == "1" and root.get("failures") == "0"
    error = root.find("testsuite/testcase/error")
    assert error.get("type") == "InputError" and "inputs" in error.get("message")
    assert md.read_text().startswith("### ⛔ drifttui check could not compare (exit 2)")
    assert json.loads(gl.read_text())[0]["severity"] == "blocker"
    assert run.out.startswith("::error title=drifttui%3A could not compare (exit 2)::")
