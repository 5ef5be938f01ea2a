"""What `drifttui check` / `diagnose` / `examples` print (issue 23 items 12, 13, 15): the origin's
own op types, "(root)" for the root, the tolerance rule in one line, nothing cut with "…" in a
wide terminal, no wrapping when piped, wrapped lines indented, and `examples` without torch."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from drifttui.cli import main
from drifttui.report import json_report
from drifttui.report.steps_text import print_steps
from drifttui.report.summary import origin_text
from drifttui.report.text import print_report
from tests.engine import own_ops

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def own_onnx(tmp_path_factory):
    """The own-op models exported once: every Resize turned 'asymmetric', the root's scale 1.6."""
    from drifttui.core.model.export import export_model

    paths = {}
    for name, edit in (("up", own_ops.asymmetric), ("root", own_ops.asymmetric), ("root_scale", own_ops.scale_constant)):
        folder = tmp_path_factory.mktemp(name)
        path = export_model(getattr(own_ops, f"build_{name}")(), (own_ops.inputs(),), {}, "dynamo", folder)
        edit(str(path))
        paths[name] = str(path)
    return paths


def _args(own_onnx, name, command="check", *extra):
    return [command, f"{HERE / 'own_ops.py'}:build_{name}", "--inputs", f"{HERE / 'own_ops.py'}:inputs",
            "--onnx", own_onnx[name], "--samples", "2", *extra]


def test_the_origin_line_lists_the_origins_own_op_types(own_onnx, capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(_args(own_onnx, "up", "check", "--json", str(out))) == 1
    head, numbers = capsys.readouterr().out.splitlines()[:2]
    # `up` resizes, concatenates and applies a ReLU itself; the Conv is its child's
    assert head == "DRIFT: origin up (Up, ONNX Resize, Concat, Relu)", head
    assert numbers.startswith("  max |d| ") and "own error" in numbers and numbers.rstrip().endswith("of 2")
    result = json_report.read(str(out))
    assert "ONNX Resize, Concat, Relu at" in origin_text(result)       # JUnit, Markdown, annotations


def test_a_root_origin_is_named_root_with_its_own_op_types(own_onnx, capsys):
    assert main(_args(own_onnx, "root")) == 1
    head = capsys.readouterr().out.splitlines()[0]
    assert head == "DRIFT: origin (root) (RootResize, ONNX Resize)", head     # not the graph's Conv


def test_the_step_texts_name_the_root(own_onnx, capsys):
    assert main(_args(own_onnx, "root_scale", "diagnose")) == 1
    text = capsys.readouterr().out
    steps = text[text.index("Debugging steps"):]
    assert "the drift reproduces on zero inputs at (root) (the same origin" in steps          # step 2
    assert "\n    (root) (Mul)" in steps                                                       # step 3: own ops
    assert "the origin (root) is stable across tolerances" in steps                           # step 4
    assert "tol 0.001: (root) max_abs=" in steps and "(no origin)" not in steps
    assert "module=(root)" in steps and "module=," not in steps and "random_origin: (root)" in steps
    assert " at  " not in steps and "\n     (" not in steps and "origin: module=\n" not in steps


def test_a_finding_of_the_root_is_placed_at_root():
    from drifttui.core.result import Finding
    from drifttui.report.steps_text import render_findings

    buf = io.StringIO()
    Console(file=buf, width=200).print(render_findings([Finding("interpolation", "warning", "", ["n1"], "m", {}, "f")]))
    assert "interpolation (root) [n1]: m" in buf.getvalue()


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    """`diagnose --example unet-resize` piped (not a tty, no $COLUMNS): its stdout and its JSON."""
    out = tmp_path_factory.mktemp("diag") / "r.json"
    mp = pytest.MonkeyPatch()
    mp.delenv("COLUMNS", raising=False)
    buf = io.StringIO()
    old = sys.stdout
    sys.stdout = buf
    try:
        code = main(["diagnose", "--example", "unet-resize", "--samples", "2", "--json", str(out)])
    finally:
        sys.stdout = old
        mp.undo()
    assert code == 1
    return buf.getvalue(), json_report.read(str(out))


def _render(result, width):
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=True, color_system=None)
    print_report(result, console)
    print_steps(result, console)
    return buf.getvalue()


def test_piped_output_is_not_wrapped(diagnosed):
    text, result = diagnosed
    fix = next(f.fix for f in result.findings if f.check == "interpolation")
    assert len(fix) > 80
    assert any(line.strip() == f"fix: {fix}" for line in text.splitlines())     # one line, whole
    assert "…" not in text


def test_the_tolerance_rule_is_one_line(diagnosed):
    text, _ = diagnosed
    lines = text.splitlines()
    assert lines[2].startswith("rule: |torch - onnx| <= atol + rtol * scale") and "--help" in lines[2]
    report = lines[:lines.index("Debugging steps")]
    assert sum("rule" in line or "rtol" in line for line in report) == 1
    assert not any("rtol_eff" in line or "float16" in line for line in lines[:4])   # a float32 model


def test_nothing_is_cut_at_160_columns_and_wrapped_lines_stay_indented(diagnosed):
    _, result = diagnosed
    for width in (160, 80):
        text = _render(result, width)
        assert "…" not in text, width
        lines = text.splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width
        steps = lines[next(k for k, line in enumerate(lines) if line.startswith("Debugging steps")):]
        flush_left = [line for line in steps if line and not line.startswith(" ")]
        assert flush_left == ["Debugging steps", "Findings"], (width, flush_left)


def test_the_tolerance_rule_names_the_low_precision_floor_only_when_the_model_has_such_values(diagnosed):
    import dataclasses

    from drifttui.core.result import InitializerInfo

    _, result = diagnosed
    half = InitializerInfo("w", "float16", [4], 0.0, 1.0, 0.5, 0.1)
    layers = [dataclasses.replace(result.layers[0], initializers=[half])] + list(result.layers[1:])
    rule = _render(result.with_(layers=layers), 200).splitlines()[2]
    assert "float16/bfloat16: rtol >= 4 eps" in rule


def test_examples_prints_the_table_without_importing_torch():
    code = ("import sys; from drifttui.cli import main; rc = main(['examples']); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    from drifttui.core.model.examples import EXAMPLES

    for e in EXAMPLES.values():
        line = next(line for line in run.stdout.splitlines() if line.split()[:1] == [e.name])
        assert (e.expected_origin or "- (clean)") in line and (e.cause or "-") in line
        assert e.description in run.stdout            # piped: one line per example, not wrapped


def test_the_catalogue_and_the_runnable_examples_agree():
    from drifttui.core.model.examples import CATALOGUE, EXAMPLES

    assert list(CATALOGUE) == list(EXAMPLES)
    for name, info in CATALOGUE.items():
        e = EXAMPLES[name]
        assert (e.description, e.expected_origin, e.cause) == (info.description, info.expected_origin, info.cause)


def test_help_carries_the_whole_rule_the_report_prints_in_one_line(capsys):
    from drifttui.core.base.tolerance import K_EPS

    assert main(["check", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "atol + rtol * scale" in text and f"rtol_eff = max(rtol, {K_EPS} * eps)" in text


def test_repro_lines_wrap_at_word_boundaries_in_a_terminal_and_say_how_to_run_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)      # a short --out: a path longer than the width is folded, as it must be
    out = "case"
    assert main(["repro", "--example", "unet-resize", "--samples", "2", "--out", out]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), lines
    text = " ".join(" ".join(lines).split())
    assert f"wrote {out}: " in text and " ONNX node(s) of up1, with the PyTorch-side inputs" in text   # words whole
    assert "the drift reproduces" in text and f"run it: the script in {out}/README.md" in text
    assert "&& see" not in text


def test_a_long_node_list_is_cut_in_a_terminal_and_whole_when_piped(diagnosed):
    """docs/cli.md: a terminal lists a list's first 3 items (the JSON report has everything); piped output
    never cuts, so a log or a grep finds every node a finding names."""
    import dataclasses

    from drifttui.report.console import UNWRAPPED_WIDTH

    _, result = diagnosed
    nodes = [f"/up/Resize_{k}" for k in range(6)]
    f0 = dataclasses.replace(result.findings[0], onnx_nodes=nodes)
    r = dataclasses.replace(result, findings=[f0, *result.findings[1:]])
    terminal = _render(r, 160)
    assert "/up/Resize_2, …]" in terminal and "/up/Resize_5" not in terminal
    buf = io.StringIO()
    print_steps(r, Console(file=buf, width=UNWRAPPED_WIDTH, soft_wrap=True, color_system=None))
    piped = buf.getvalue()
    assert f"[{', '.join(nodes)}]" in piped and "…" not in piped
