"""Issue 22: names from a model, an ONNX file or a report are untrusted text.

A real model whose module names carry terminal escapes, a GitHub workflow command after a
line break, HTML and Rich markup, exported by TorchScript (node and initializer names quote
the module names) with a drift injected into the hostile Linear: the name is the drift origin
and every output quotes it. Nothing that meets a terminal may carry a control character; the
JSON keeps every name exact."""
from __future__ import annotations

import io
import json
import re

import pytest
from onnx import TensorProto, helper
from rich.console import Console
from rich.text import Text

from drifttui.report.escape import CommandGuard, terminal, write_command
from tests import hostile
from tests.ci.conftest import run_cli

CONTROL = re.compile(hostile.CONTROL)


@pytest.fixture(scope="module")
def drifting(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    spec, onnx_path = hostile.export_drifting(folder)
    return spec, onnx_path, folder


def _no_control(text: str) -> None:
    bad = sorted({f"{ord(c):#x}" for c in CONTROL.findall(text)})
    assert not bad, f"control characters printed: {bad}"


def _foreign_commands(text: str) -> list[str]:
    """Printed lines GitHub's runner would read as a workflow command, other than drifttui's own."""
    own = re.compile(r"^::(error|warning) (file=[^,:]*,)?title=drifttui[^:]*::")
    lines = re.split(r"[\r\n]", text)
    return [line for line in lines if line.lstrip().startswith("::") and not own.match(line)]


def test_check_prints_hostile_names_visibly_and_the_json_keeps_them(drifting):
    spec, onnx_path, folder = drifting
    report = folder / "r.json"
    run = run_cli(["check", spec, "--onnx", onnx_path, "--inputs", "shape:1x8", "--samples", "3",
                   "--json", str(report)])
    assert run.code == 1, run.err
    _no_control(run.out + run.err)
    assert "\\x1b]52;c;cHduZWQ=\\x07" in run.out            # shown, not executed
    assert "MarkupError" not in run.err and "\\x3c" not in run.out    # markup-like names are text
    data = json.loads(report.read_text())
    assert data["drift_origin"]["module"] == hostile.EVIL        # exact in the JSON
    assert hostile.EVIL_HTML in {layer["module"] for layer in data["layers"]}


def test_no_printed_line_is_a_foreign_github_command(drifting):
    spec, onnx_path, _ = drifting
    run = run_cli(["check", spec, "--onnx", onnx_path, "--inputs", "shape:1x8", "--samples", "3"],
                  actions="true")
    assert run.code == 1
    assert not _foreign_commands(run.out), _foreign_commands(run.out)
    assert not _foreign_commands(run.err), _foreign_commands(run.err)
    own = [line for line in run.out.splitlines() if line.startswith("::error")]
    assert own and "%0A" not in own[0].split("::", 2)[1]      # the name's line break is not a property break
    _no_control(run.out + run.err)


def test_diagnose_text_is_escaped(drifting):
    spec, onnx_path, _ = drifting
    run = run_cli(["diagnose", spec, "--onnx", onnx_path, "--inputs", "shape:1x8", "--samples", "3",
                   "--step", "3"], actions="true")
    assert run.code == 1, run.err
    _no_control(run.out + run.err)
    assert not _foreign_commands(run.out + "\n" + run.err)


def _onnx_with(tmp_path, input_name="x", domain=""):
    x = helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("Relu", [input_name], ["y"], name="n" + hostile.ESCAPES, domain=domain)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    path = tmp_path / "evil.onnx"
    path.write_bytes(helper.make_model(helper.make_graph([node], "g", [x], [y]),
                                       opset_imports=opsets).SerializeToString())
    model = tmp_path / "relu.py"
    model.write_text("import torch\n\ndef build():\n    return torch.nn.ReLU()\n")
    return f"{model}:build", str(path)


@pytest.mark.parametrize("where", ["input", "domain"])
def test_one_line_errors_quote_hostile_names_visibly(tmp_path, where):
    evil = "e\x1b[31mRED" + hostile.ESCAPES + hostile.ANNOTATION      # a colour code too: shown, not stripped
    spec, path = _onnx_with(tmp_path, **({"input_name": evil} if where == "input" else {"domain": evil}))
    run = run_cli(["check", spec, "--onnx", path, "--inputs", "shape:1x5", "--samples", "1"], actions="true")
    assert run.code in (2, 3), run.err
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("drifttui: error: "), run.err
    _no_control(run.err + run.out)
    assert "\\x1b]0;TITLE\\x07" in lines[0]
    assert "e\\x1b[31mRED" in lines[0]         # the name as the file spells it, findable there
    assert not _foreign_commands(run.out + "\n" + run.err)


def test_the_guard_holds_when_rich_wraps_a_name_to_the_start_of_a_line():
    # a table cell never wraps, but a note does: a word of a name can start a printed line
    raw = io.StringIO()
    guard = CommandGuard(raw)
    console = Console(file=guard, width=30, color_system=None)
    console.print(Text("note: module_with_a_long_name ::error title=pwned::x is fused"))
    write_command(guard, "::error title=drifttui::own")
    lines = raw.getvalue().splitlines()
    assert any("\\::error title=pwned::x" in line for line in lines), lines
    assert not _foreign_commands(raw.getvalue())
    assert lines[-1] == "::error title=drifttui::own"


def test_the_guard_passes_progress_lines_and_partial_writes():
    raw = io.StringIO()
    guard = CommandGuard(raw)
    guard.write("\r  samples 1/3")
    assert raw.getvalue() == "\r  samples 1/3"          # shown at once (no newline needed)
    guard.write("\r  :")
    guard.write(":warning::x\n  a::b\n")
    assert raw.getvalue().endswith("\r  \\::warning::x\n  a::b\n")


def test_terminal_escape_is_visible_and_idempotent():
    s = "a\x1b[2Jb\x07c\x9bd\u202ee\nf\tg"
    out = terminal(s)
    assert out == "a\\x1b[2Jb\\x07c\\x9bd\\u202ee\\x0af\\x09g"
    assert terminal(out) == out
    assert terminal(s, keep_newlines=True).count("\n") == 1


@pytest.mark.parametrize("flag", ["--baseline", "tui --report"])
@pytest.mark.parametrize("depth", [100_000, 200])
def test_a_deeply_nested_report_is_refused_naming_the_file(tmp_path, flag, depth):
    # issue 22, item 12: RecursionError, exit 3 (json.loads past ~1000 levels; the readers past 64)
    path = tmp_path / "deep.json"
    path.write_text('{"schema_version": 1, "layers": ' + "[" * depth + "]" * depth + "}")
    argv = (["check", "--example", "resnet18", "--samples", "1", "--baseline", str(path)] if flag == "--baseline"
            else ["tui", "--report", str(path)])
    run = run_cli(argv)
    assert run.code == 2, run.err
    assert run.err.count("\n") == 1 and str(path) in run.err and "nested" in run.err


def test_repro_out_through_a_symlink_to_an_empty_folder(tmp_path):
    # issue 22, item 13: NotADirectoryError (exit 3) after the whole run
    target = tmp_path / "empty"
    target.mkdir()
    link = tmp_path / "case"
    link.symlink_to(target)
    run = run_cli(["repro", "--example", "unet-resize", "--samples", "2", "--out", str(link)])
    assert run.code == 1, run.err                       # the drift reproduces
    assert (target / "model.onnx").is_file() and (target / "test_data_set_0" / "input_0.pb").is_file()
    assert link.is_symlink() and (link / "model.onnx").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".drifttui-")]


def test_repro_out_through_a_symlink_to_a_full_folder_is_refused_before_the_run(tmp_path):
    target = tmp_path / "full"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    link = tmp_path / "case"
    link.symlink_to(target)
    run = run_cli(["repro", "--example", "unet-resize", "--samples", "2", "--out", str(link)])
    assert run.code == 2 and "--out" in run.err and "not an empty folder" in run.err
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


SLASH = '''
import torch
from torch import nn


class Slash(nn.Module):
    def __init__(self):
        super().__init__()
        self.d = nn.ModuleDict({"a/b": nn.Linear(8, 8), "c": nn.Linear(8, 4)})

    def forward(self, x):
        return self.d["c"](torch.relu(self.d["a/b"](x)))


def build():
    torch.manual_seed(0)
    return Slash().eval()
'''


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_a_module_name_with_a_slash_is_a_key_not_a_scope_path(tmp_path, dynamo):
    # issue 22, item 9: a ModuleDict key "a/b" moved the origin to (root) (TorchScript node paths)
    import importlib.util
    import warnings

    import onnx
    import torch
    from onnx import numpy_helper

    (tmp_path / "slash.py").write_text(SLASH)
    spec = importlib.util.spec_from_file_location("slash_model", tmp_path / "slash.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = tmp_path / "slash.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(mod.build(), (torch.randn(1, 8),), str(path), dynamo=dynamo, input_names=["x"])
    model = onnx.load(str(path), load_external_data=True)
    bias = next(t for t in model.graph.initializer if "a/b" in t.name and "bias" in t.name)
    bias.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(bias) + 0.05, bias.name))
    onnx.save(model, str(path))
    report = tmp_path / "r.json"
    run = run_cli(["check", f"{tmp_path / 'slash.py'}:build", "--onnx", str(path), "--inputs", "shape:1x8",
                   "--samples", "2", "--json", str(report)])
    assert run.code == 1, run.err
    data = json.loads(report.read_text())
    assert data["drift_origin"]["module"] == "d.a/b"
    assert {L["module"]: L["status"] for L in data["layers"]}["d.c"] == "inherited"


RETURNS = '''
import torch
from torch import nn


class Returns(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return y if self.value == "tensor" else self.value


class FailsOnOne(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if float(x.sum()) > 1.9:
            raise ValueError("boom")
        return self.fc(x)


def none():
    return Returns(None)


def text():
    return Returns("hello")


def number():
    return Returns(3)


def tensor():
    torch.manual_seed(0)
    return Returns("tensor")


def fails_on_one():
    torch.manual_seed(0)
    return FailsOnOne()
'''


@pytest.fixture(scope="module")
def returns(tmp_path_factory):
    import warnings

    import torch

    folder = tmp_path_factory.mktemp("returns")
    (folder / "returns.py").write_text(RETURNS)
    import importlib.util

    spec = importlib.util.spec_from_file_location("returns_model", folder / "returns.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(mod.tensor(), (torch.randn(1, 4),), str(folder / "r.onnx"), dynamo=False,
                          input_names=["x"])
    return folder


@pytest.mark.parametrize("fn, says", [("none", "returned None"), ("text", "returned a str ('hello')"),
                                      ("number", "returned an int (3)")])
def test_a_forward_that_returns_no_tensor_names_what_it_returned(returns, fn, says):
    # issue 22, item 15: "returns 0 output tensor(s)" said nothing of what came back
    run = run_cli(["check", f"{returns / 'returns.py'}:{fn}", "--onnx", str(returns / "r.onnx"),
                   "--inputs", "shape:1x4", "--samples", "2"])
    assert run.code == 2 and run.err.count("\n") == 1 and says in run.err, run.err


def test_an_error_on_one_sample_names_the_sample(returns):
    run = run_cli(["check", f"{returns / 'returns.py'}:fails_on_one", "--onnx", str(returns / "r.onnx"),
                   "--inputs", "shape:1x4", "--samples", "20"])
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.spec import parse_input_spec

    src = build_source(parse_input_spec("shape:1x4"), 0, False, None)       # the samples the run draws
    first = next(i for i in range(20) if float(src.sample(i)[0][0].sum()) > 1.9)
    assert first > 0
    assert run.code == 2 and f"failed on sample {first} (inputs of shape 1x4): ValueError: boom" in run.err, run.err


def test_a_killed_runs_partial_report_is_removed_and_named(returns, tmp_path):
    import os
    import time

    left = tmp_path / ".drifttui-abc123.tmp"
    left.write_text('{"schema_version": 1, "verd')            # what a SIGKILL mid-write leaves
    old = time.time() - 3600
    os.utime(left, (old, old))
    fresh = tmp_path / ".drifttui-fresh.tmp"                  # another run writing right now: kept
    fresh.write_text("{")
    run = run_cli(["check", f"{returns / 'returns.py'}:tensor", "--onnx", str(returns / "r.onnx"),
                   "--inputs", "shape:1x4", "--samples", "2", "--json", str(tmp_path / "r.json")])
    assert run.code == 0, run.err
    assert not left.exists() and fresh.exists()
    assert f"removed {left}, a partial report a killed run left" in run.err
