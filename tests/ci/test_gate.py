"""--fail-on, --min-top1 and --baseline: each gives its documented exit code (report/gate.py)."""
from __future__ import annotations

import pytest

from drifttui.report import json_report
from drifttui.report.gate import Gate, decide
from tests.ci.conftest import classifier_args, run_cli


@pytest.fixture(scope="module")
def reports(variants, tmp_path_factory):
    """One JSON report per classifier variant (the drift checks run too: --fail-on error)."""
    folder = tmp_path_factory.mktemp("gate")
    out = {}
    for name in ("clean", "stale", "flip", "worse", "other"):
        path = folder / f"{name}.json"
        run = run_cli(classifier_args(variants, name, "--fail-on", "never", "--json", str(path)))
        assert run.code == 0, run.err
        out[name] = path
    return out


def _result(reports, name):
    return json_report.read(str(reports[name]))


def test_the_variants_are_what_the_tests_need(reports):
    clean, stale, flip, other = (_result(reports, n) for n in ("clean", "stale", "flip", "other"))
    assert clean.verdict == "ok" and stale.verdict == "ok"
    assert flip.verdict == "drift" and flip.drift_origin.module == "fc2"
    assert other.verdict == "drift" and other.drift_origin.module == "fc1"
    assert 0 < flip.outputs[0].top1_agreement < 1 and clean.outputs[0].top1_agreement == 1


def test_fail_on_each_value_gives_its_exit_code(variants, reports):
    assert run_cli(classifier_args(variants, "flip")).code == 1                          # default: drift
    assert run_cli(classifier_args(variants, "flip", "--fail-on", "drift")).code == 1
    assert run_cli(classifier_args(variants, "flip", "--fail-on", "never")).code == 0
    assert run_cli(classifier_args(variants, "clean", "--fail-on", "error")).code == 0
    # a stale initializer whose outputs still agree: exit 0 on drift, 1 with --fail-on error
    assert run_cli(classifier_args(variants, "stale")).code == 0
    run = run_cli(classifier_args(variants, "stale", "--fail-on", "error"))
    assert run.code == 1
    assert "GATE FAILED (exit 1): error finding: weights at fc2: initializer fc2.bias differs from torch fc2.bias" in run.out
    assert run_cli(classifier_args(variants, "stale", "--fail-on", "never")).code == 0


def test_fail_on_error_on_a_diagnose_report(reports):
    stale = _result(reports, "stale")
    assert [f.check for f in stale.findings if f.severity == "error"] == []    # check without --fail-on error
    from drifttui.core.result import Finding

    err = Finding("weights", "error", "fc2", [], "initializer fc2.bias differs", {}, "re-export")
    warn = Finding("dtype", "warning", "fc2", [], "float16 weights", {}, "cast")
    assert decide(stale.with_(findings=[warn]), Gate("error")).exit_code == 0
    assert decide(stale.with_(findings=[err]), Gate("error")).exit_code == 1
    assert decide(stale.with_(findings=[err]), Gate("drift")).exit_code == 0
    # with a baseline that already has the finding, only a new finding fails
    assert decide(stale.with_(findings=[err]), Gate("error", baseline=stale.with_(findings=[err]))).exit_code == 0


def test_min_top1_is_a_gate_of_its_own(variants, reports):
    flip = _result(reports, "flip")
    top1 = flip.outputs[0].top1_agreement
    run = run_cli(classifier_args(variants, "flip", "--fail-on", "never", "--min-top1", "0.997"))
    assert run.code == 1 and "gate fails: top-1 agreement" in run.out and "below --min-top1 0.997" in run.out
    below = f"{top1 - 0.01:.4f}"
    assert run_cli(classifier_args(variants, "flip", "--fail-on", "never", "--min-top1", below)).code == 0
    assert run_cli(classifier_args(variants, "clean", "--min-top1", "0.997")).code == 0
    assert run_cli(classifier_args(variants, "clean", "--min-top1", "1")).code == 0
    # the same decisions from the saved report
    assert decide(flip, Gate("never", min_top1=top1)).exit_code == 0
    assert decide(flip, Gate("never", min_top1=min(1.0, top1 + 1e-6))).exit_code == 1


def test_min_top1_without_a_classifier_output_is_not_a_silent_pass(unet_clean):
    result = json_report.read(str(unet_clean.files["json"]))
    decision = decide(result, Gate(min_top1=0.9))
    assert decision.exit_code == 2 and "needs a classifier output" in decision.usage


@pytest.mark.parametrize("value", ["1.5", "-0.1", "abc"])
def test_min_top1_must_be_a_fraction(value, capsys):
    from drifttui.cli import main

    assert main(["check", "--example", "unet", "--min-top1", value]) == 2
    assert "--min-top1" in capsys.readouterr().err


def test_baseline_passes_an_unchanged_drift_and_fails_a_new_one(variants, reports):
    base = str(reports["flip"])
    run = run_cli(classifier_args(variants, "flip", "--baseline", base))
    assert run.code == 0
    assert "baseline: known drift at fc2 is unchanged" in run.out and "known drift, carried by the baseline" in run.out
    run = run_cli(classifier_args(variants, "other", "--baseline", base))
    assert run.code == 1 and "new drift origin fc1 (the baseline's: fc2)" in run.out
    run = run_cli(classifier_args(variants, "worse", "--baseline", base))
    assert run.code == 1 and "worse drift at fc2" in run.out
    run = run_cli(classifier_args(variants, "flip", "--baseline", str(reports["clean"])))
    assert run.code == 1 and "new drift (the baseline has none)" in run.out
    run = run_cli(classifier_args(variants, "clean", "--baseline", base))
    assert run.code == 0 and "the baseline's drift at fc2 is gone" in run.out


def test_baseline_summary_and_junit_say_what_changed(variants, reports, tmp_path):
    import xml.etree.ElementTree as ET

    md, xml = tmp_path / "s.md", tmp_path / "j.xml"
    run = run_cli(classifier_args(variants, "flip", "--baseline", str(reports["flip"]), "--markdown", str(md),
                                  "--junit", str(xml)))
    assert run.code == 0
    text = md.read_text()
    assert "gate passes (known drift, carried by the baseline)" in text
    assert "#### Against the baseline" in text and "known drift at fc2 is unchanged" in text
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("failures") == "0" and int(suite.get("skipped")) >= 1    # the known drift is skipped


def test_an_unreadable_baseline_is_refused_before_the_run(variants, tmp_path):
    bad = tmp_path / "old.json"
    bad.write_text("not json")
    run = run_cli(classifier_args(variants, "clean", "--baseline", str(bad)))
    assert run.code == 2 and "not a drifttui JSON report" in run.err
    assert "samples" not in run.out       # no report printed: nothing ran


def test_help_documents_the_gate(capsys):
    from drifttui.cli import main

    for command in ("check", "diagnose"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        for flag in ("--junit PATH", "--markdown PATH", "--gitlab PATH", "--fail-on {drift,error,never}",
                     "--min-top1 FRACTION", "--baseline OLD.json", "--fail-on error   also exit 1"):
            assert flag in text, (command, flag)


def _edited(reports, tmp_path, name, edit):
    import json

    data = json.loads(reports[name].read_text())
    edit(data)
    path = tmp_path / f"edited-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_baseline_of_another_run_is_exit_2_naming_the_difference(variants, reports, tmp_path, unet_drift):
    # issue 22, item 6: a baseline of another model carried "the known drift" and the gate passed
    def model(d):
        d["config"]["model"] = "/elsewhere/resnet.py:build"

    def inputs(d):
        d["config"]["inputs"] = "shape:1x32"

    def modules(d):
        d["layers"][1]["class"] = "Conv2d"

    def ops(d):
        d["layers"][1]["op_types"] = ["QLinearMatMul"]

    cases = [(model, "the model differs: classifier.py:build in this run, resnet.py:build in the baseline"),
             (inputs, "the inputs differ"),
             (modules, "the module calls differ: module call #1"),
             (ops, "the ONNX graphs differ: op types")]
    for edit, needle in cases:
        run = run_cli(classifier_args(variants, "flip", "--baseline", _edited(reports, tmp_path, "flip", edit)))
        assert run.code == 2, (needle, run.err)
        assert "--baseline is not a report of this run" in run.err and needle in run.err, run.err
    run = run_cli(classifier_args(variants, "flip", "--baseline", str(unet_drift.files["json"])))
    assert run.code == 2 and "example:unet-resize in the baseline" in run.err


def test_a_baseline_from_another_checkout_of_the_same_run_still_matches(variants, reports, tmp_path):
    def moved(d):       # the same model file and inputs in another folder (another CI checkout)
        d["config"]["model"] = "/ci/other-checkout/tests/ci/classifier.py:build"
        d["config"]["inputs"] = "/ci/other-checkout/tests/ci/classifier.py:inputs"
        d["config"]["onnx"] = "/ci/other-checkout/flip.onnx"

    run = run_cli(classifier_args(variants, "flip", "--baseline", _edited(reports, tmp_path, "flip", moved)))
    assert run.code == 0 and "known drift at fc2 is unchanged" in run.out + run.err
