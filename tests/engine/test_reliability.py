"""Reliability (issue 10): no silent pass (output counts, empty inputs), huge inputs refused
before allocating, every error one line, TorchScript inside a callable degrades honestly,
and a dependency's failure is named as such, not as drifttui's internal bug."""
import io
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from tests.conftest import ROOT, model_spec
from tests.engine.test_bad_input import assert_one_line, run_cli, twice_onnx  # noqa: F401 (fixture)


# -- 6: output-count mismatch ---------------------------------------------------------------
def test_onnx_with_fewer_outputs_is_refused(capsys, tmp_path):
    # tests.models.twice returns two tensors; this graph returns one
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    path = tmp_path / "one.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(path), "--inputs", "shape:2x8",
                        json_path=tmp_path / "r.json")
    assert code == 2
    assert_one_line(err, "returns 2 output tensor(s)", "ONNX graph has 1 output(s)")
    assert not (tmp_path / "r.json").exists()


def test_onnx_with_an_extra_output_is_refused(capsys, tmp_path, twice_onnx):  # noqa: F811
    proto = onnx.shape_inference.infer_shapes(onnx.load(str(twice_onnx)))
    outputs = {o.name for o in proto.graph.output}
    vi = next(v for v in proto.graph.value_info if v.name not in outputs)
    extra = vi.name
    proto.graph.output.append(vi)
    path = tmp_path / "three.onnx"
    onnx.save(proto, str(path))
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(path), "--inputs", "shape:2x8")
    assert code == 2
    assert_one_line(err, "returns 2 output tensor(s)", "ONNX graph has 3 output(s)", extra)


def test_matching_output_counts_still_pass(capsys, twice_onnx):  # noqa: F811
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(twice_onnx), "--inputs", "shape:2x8",
                        "--samples", "2")
    assert code == 0, err


# -- 7 and 11: empty and huge inputs --------------------------------------------------------
@pytest.mark.parametrize("inputs", ["shape:0x8", "shape:2x8;0"])
def test_zero_element_shapes_are_refused(capsys, twice_onnx, inputs):  # noqa: F811
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(twice_onnx), "--inputs", inputs)
    assert code == 2
    assert_one_line(err, "holds no element")


def test_zero_element_tensors_from_a_file_are_refused(capsys, tmp_path, twice_onnx):  # noqa: F811
    path = tmp_path / "empty.npy"
    np.save(path, np.zeros((0, 8), np.float32))
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(twice_onnx), "--inputs", str(path))
    assert code == 2
    assert_one_line(err, "has shape 0x8", "no element")


def test_huge_shape_is_refused_before_allocating(capsys):
    code, err = run_cli(capsys, "check", model_spec("twice"), "--inputs", "shape:1000000x1000000x10")
    assert code == 2
    assert_one_line(err, "1000000x1000000x10", "37252.9 GiB", "memory")


def test_huge_default_shape_from_the_graph_is_refused(capsys, tmp_path):
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100000, 100000, 100])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100000, 100000, 100])])
    path = tmp_path / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(path))
    assert code == 2
    assert_one_line(err, "ONNX graph's inputs", "100000x100000x100", "GiB")


# -- 12: one line, always -------------------------------------------------------------------
def test_multi_line_callable_message_is_one_line(capsys, tmp_path):
    (tmp_path / "m.py").write_text("def build():\n    raise RuntimeError('first line\\nsecond line\\nthird')\n"
                                   "def data():\n    raise ValueError('bad\\n\\ninputs')\n")
    code, err = run_cli(capsys, "check", f"{tmp_path / 'm.py'}:build", "--inputs", "shape:2x8")
    assert code == 2
    assert_one_line(err, "raised RuntimeError: first line")
    code, err = run_cli(capsys, "check", model_spec("twice"), "--inputs", f"{tmp_path / 'm.py'}:data")
    assert code == 2
    assert_one_line(err, "raised ValueError: bad")


@pytest.mark.parametrize("argv", [["check", "--samples", "x"], ["check", "--opt-level", "max"],
                                  ["check", "--no-such-flag"], ["diagnose", "--step", "9"], ["nope"]])
def test_usage_errors_are_one_line_with_a_help_pointer(capsys, argv):
    code, err = run_cli(capsys, *argv)
    assert code == 2
    assert_one_line(err, "--help`")
    assert "usage:" not in err


def test_one_line_flattens_and_caps():
    from drifttui.errors import one_line

    # a colour code is shown, not stripped: a name from a file must be findable as the file spells it
    assert one_line("a\n\n  b\tc\x1b[1m d\x1b[0m") == "a b c\\x1b[1m d\\x1b[0m"
    long = one_line("x" * 5000)
    assert len(long) <= 600 and long.endswith("…")


# -- TorchScript returned by a callable ------------------------------------------------------
SCRIPTED = """
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
    def forward(self, x):
        return torch.relu(self.fc(x))
class Wrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.jit.script(plain())
    def forward(self, x):
        return self.inner(x) * 1.0
def plain():
    torch.manual_seed(0)
    return Net().eval()
def scripted():
    return torch.jit.script(plain())
def wrapped():
    return Wrapper()
"""


@pytest.fixture(scope="module")
def scripted_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("scripted")
    (d / "net.py").write_text(SCRIPTED)
    sys.path.insert(0, str(d))
    try:
        import net  # noqa: the test's own file
        path = d / "net.onnx"
        torch.onnx.export(net.plain(), (torch.randn(2, 8),), str(path), dynamo=True, external_data=False)
    finally:
        sys.path.remove(str(d))
        sys.modules.pop("net", None)
    return d / "net.py", path


@pytest.mark.parametrize("fn,note", [("scripted", "the model is TorchScript"),
                                     ("wrapped", "holds a TorchScript submodule (inner)")])
def test_callable_returning_torchscript_degrades_to_outputs(tmp_path, scripted_files, fn, note):
    import json

    from drifttui.cli import main

    model_py, onnx_path = scripted_files
    out = tmp_path / "r.json"
    code = main(["check", f"{model_py}:{fn}", "--onnx", str(onnx_path), "--inputs", "shape:2x8",
                 "--samples", "2", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["coverage"]["localized"] is False
    assert any(note in n and "model outputs" in n for n in report["notes"]), report["notes"]


# -- a dependency's failure is not drifttui's internal bug ----------------------------------
def _raised(fn):
    try:
        fn()
    except Exception as exc:     # the real exception, raised by the real library
        return exc
    raise AssertionError("no exception")


def test_failures_inside_dependencies_are_named():
    from drifttui.cli import unexpected_failure
    from drifttui.errors import failing_dependency

    exc = _raised(lambda: torch.load(io.BytesIO(b"not a checkpoint"), weights_only=True))
    assert failing_dependency(exc) == "torch"
    assert unexpected_failure(exc).startswith("torch failed: ")
    exc = _raised(lambda: np.load(io.BytesIO(b"not an array"), allow_pickle=False))
    assert failing_dependency(exc) == "numpy"
    assert "internal failure" not in unexpected_failure(exc)


def test_failures_in_drifttui_code_stay_internal():
    from drifttui.cli import unexpected_failure
    from drifttui.errors import failing_dependency
    from drifttui.core.model.spec import ModelSpec
    from drifttui.core.model.loading import load_torch_model

    exc = _raised(lambda: load_torch_model(ModelSpec("callable")))     # callable=None: our bug
    assert failing_dependency(exc) == ""
    assert unexpected_failure(exc).startswith("internal failure: ")
    assert unexpected_failure(MemoryError()).startswith("out of memory")


def test_usage_error_in_a_real_process_is_one_line(tmp_path):
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "drifttui", "check", "--samples", "x"],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1


def test_the_command_ends_at_once_with_its_report_whole(tmp_path):
    """`python -m drifttui check` ends without the interpreter's teardown once torch is loaded
    (cli.entry): the report piped to stdout is whole, the exit code is the verdict's, and the
    temporary folders are gone (the exit handlers still ran)."""
    import json
    import os

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    p = subprocess.run([sys.executable, "-m", "drifttui", "check", "example:transformer-ln-eps", "--samples", "2",
                        "--json", "-"], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    report = json.loads(p.stdout)
    assert report["verdict"] == "drift" and p.returncode == 1, p.stderr[-500:]
    assert report["drift_origin"]["module"] == "layers.1.norm2"
    left = [p.name for p in tmp.iterdir() if "drifttui" in p.name]
    assert left == [], left          # (torch's own caches, torchinductor_*, may stay: not ours)
