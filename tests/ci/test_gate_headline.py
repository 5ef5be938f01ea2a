"""The gate's outcome in the text report's first lines (issue 23 item 9): a gate that fails
without a drift says so first, why, and the finding's fix; stderr does not repeat it."""
from __future__ import annotations

from tests.ci.conftest import classifier_args, run_cli


def test_fail_on_error_headline_says_the_gate_failed_why_and_the_fix(variants):
    run = run_cli(classifier_args(variants, "stale", "--fail-on", "error"))
    assert run.code == 1
    lines = run.out.splitlines()
    assert lines[0].startswith("GATE FAILED (exit 1): error finding: weights at fc2: initializer fc2.bias "
                               "differs from torch fc2.bias"), lines[0]
    assert lines[1].strip().startswith("fix (weights at fc2): re-export"), lines[1]
    assert "no drift at atol=0.0001, rtol=0.0001 over 3 sample(s): the outputs agree" in lines[2]
    assert not any(line.startswith("OK") for line in lines)
    assert run.err == ""        # the report says it; nothing repeated after it on stderr


def test_the_gate_lines_go_to_stderr_when_stdout_is_the_json_report(variants):
    run = run_cli(classifier_args(variants, "stale", "--fail-on", "error", "--json", "-"))
    assert run.code == 1 and run.out.lstrip().startswith("{")
    assert "gate: error finding: weights at fc2: initializer fc2.bias differs" in run.err


def test_a_drift_the_gate_passes_says_so_under_the_headline(variants):
    run = run_cli(classifier_args(variants, "flip", "--fail-on", "never"))
    lines = run.out.splitlines()
    assert run.code == 0 and lines[0].startswith("DRIFT: origin fc2")
    assert lines[2].strip() == "gate passes (exit 0): --fail-on never"
    assert run.err == ""


def test_a_clean_run_has_no_gate_line(variants):
    run = run_cli(classifier_args(variants, "clean", "--fail-on", "error"))
    assert run.code == 0 and run.out.startswith("OK: no drift at atol=0.0001, rtol=0.0001 over 3 sample(s)")
    assert "gate" not in run.out.splitlines()[1] and run.err == ""
