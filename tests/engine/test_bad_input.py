"""Bad input: a documented exit code, one line on stderr naming problem and fix, no traceback,
and no report file left behind."""
import os
import subprocess
import sys

import onnx
import pytest
import torch
from onnx import TensorProto, helper

from drifttui.cli import main
from tests.conftest import ROOT, model_spec, without_progress


@pytest.fixture(scope="module")
def twice_onnx(tmp_path_factory):
    from tests.models import twice

    d = tmp_path_factory.mktemp("twice")
    path = d / "twice.onnx"
    torch.onnx.export(twice(), (torch.randn(2, 8),), str(path), dynamo=True, external_data=False)
    return path


def run_cli(capsys, *argv, json_path=None):
    args = list(argv)
    if json_path is not None:
        args += ["--json", str(json_path)]
    code = main(args)
    err = without_progress(capsys.readouterr().err)      # what is said besides the progress lines
    return code, err


def assert_one_line(err, *needles):
    lines = [line for line in without_progress(err).strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("drifttui: error: ")
    assert "Traceback" not in err
    for n in needles:
        assert n.lower() in lines[0].lower(), lines[0]


def test_missing_model_file(capsys, tmp_path):
    code, err = run_cli(capsys, "check", str(tmp_path / "nope.py") + ":build", json_path=tmp_path / "r.json")
    assert code == 2
    assert_one_line(err, "does not exist")
    assert not (tmp_path / "r.json").exists()


def test_spec_that_does_not_import(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_real_package_xyz\n")
    code, err = run_cli(capsys, "check", f"{bad}:build")
    assert code == 2
    assert_one_line(err, "failed to import", "not_a_real_package_xyz")
    code, err = run_cli(capsys, "check", "not_a_real_package_xyz.models:build")
    assert code == 2
    assert_one_line(err, "failed to import")


def test_callable_that_raises(capsys):
    code, err = run_cli(capsys, "check", model_spec("raises"), "--inputs", "shape:2x8")
    assert code == 2
    # the user's own message folded into the one line, its second line kept
    assert_one_line(err, "raised RuntimeError", "weights are missing; looked for them in ckpt/latest.pt")


def test_callable_returns_no_module(capsys):
    code, err = run_cli(capsys, "check", model_spec("not_a_module"), "--inputs", "shape:2x8")
    assert code == 2
    assert_one_line(err, "not a torch.nn.Module")


def test_missing_attribute_and_bad_spec(capsys):
    code, err = run_cli(capsys, "check", model_spec("no_such_fn"), "--inputs", "shape:2x8")
    assert code == 2
    assert_one_line(err, "no attribute 'no_such_fn'")
    code, err = run_cli(capsys, "check", "just_a_word")
    assert code == 2
    assert_one_line(err, "file.py:function")


@pytest.mark.parametrize("content,needle", [(None, "does not exist"), (b"", "empty"),
                                             (b"\x08\x07garbage-not-protobuf\xff\xff", "corrupt")])
def test_missing_or_corrupt_onnx(capsys, tmp_path, content, needle):
    path = tmp_path / "m.onnx"
    if content is not None:
        path.write_bytes(content)
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(path), json_path=tmp_path / "r.json")
    assert code == 2
    assert_one_line(err, needle)
    assert not (tmp_path / "r.json").exists()


def test_truncated_onnx(capsys, tmp_path, twice_onnx):
    data = twice_onnx.read_bytes()
    path = tmp_path / "trunc.onnx"
    path.write_bytes(data[: len(data) // 2])
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(path))
    assert code == 2
    assert_one_line(err, str(path))


def test_missing_external_data(capsys, tmp_path):
    from tests.models import bn_inplace

    path = tmp_path / "ext.onnx"
    torch.onnx.export(bn_inplace(), (torch.randn(1, 3, 16, 16),), str(path), dynamo=True, external_data=True)
    (tmp_path / "ext.onnx.data").unlink()
    code, err = run_cli(capsys, "check", model_spec("bn_inplace"), "--onnx", str(path))
    assert code == 2
    assert_one_line(err, "external data", "missing")


@pytest.mark.parametrize("inputs,needle", [
    ("shape:2x8;2x8", "ONNX graph takes 1"),      # count
    ("shape:2x9", "shape 2x9"),                    # shape: torch refuses first
    ("shape:int64:2x8", "expects float32"),        # dtype
])
def test_inputs_that_do_not_fit(capsys, twice_onnx, inputs, needle):
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(twice_onnx), "--inputs", inputs)
    assert code == 2
    assert_one_line(err, needle)


def test_shape_that_only_onnx_refuses(capsys, twice_onnx):
    # torch accepts a batch of 3, the exported graph has a static batch of 2
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(twice_onnx), "--inputs", "shape:3x8")
    assert code == 2
    assert_one_line(err, "do not fit the ONNX graph")


def test_op_ort_cannot_run(capsys, tmp_path):
    node = helper.make_node("FancyOp", ["x"], ["y"], domain="com.example.custom")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example.custom", 1)])
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))
    # scaled: one output, like the graph (a count mismatch would be refused first)
    code, err = run_cli(capsys, "check", model_spec("scaled"), "--onnx", str(path), json_path=tmp_path / "r.json")
    assert code == 3
    assert_one_line(err, "ONNX Runtime cannot load the graph")
    assert not (tmp_path / "r.json").exists()


def test_a_file_that_declares_a_value_in_another_type_than_its_node_computes(capsys, tmp_path):
    """onnxconverter-common's float16 conversion of a dynamo BERT or ViT declares a Where's output float16
    while the Where computes float32 (ONNX Runtime: "Type (tensor(float16)) of output arg (select) of node
    (node_select) does not match expected type (tensor(float))"): one line naming the node and the
    converter's defect, exit 3, no traceback, no report written."""
    import numpy as np
    from onnx import numpy_helper

    cond = numpy_helper.from_array(np.ones((2, 8), bool), "cond")
    nodes = [helper.make_node("Where", ["cond", "x", "x"], ["select"], name="node_select"),
             helper.make_node("Relu", ["select"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [cond],
                              value_info=[helper.make_tensor_value_info("select", TensorProto.FLOAT16, [2, 8])])
    path = tmp_path / "mistyped.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    code, err = run_cli(capsys, "check", model_spec("scaled"), "--onnx", str(path), json_path=tmp_path / "r.json")
    assert code == 3
    assert_one_line(err, "ONNX Runtime cannot load the graph")
    assert "'node_select' computes float" in err and "defect of the converter" in err and "Traceback" not in err
    assert not (tmp_path / "r.json").exists()


def test_nan_outputs(capsys, tmp_path):
    code, err = run_cli(capsys, "check", model_spec("nan_model"), "--inputs", "shape:2x8", "--samples", "2",
                        json_path=tmp_path / "r.json")
    assert code == 3
    assert_one_line(err, "NaN")
    assert not (tmp_path / "r.json").exists()


def test_unwritable_json_path(capsys, tmp_path):
    code, err = run_cli(capsys, "check", "--example", "unet", json_path=tmp_path / "missing-dir" / "r.json")
    assert code == 2
    assert_one_line(err, "does not exist")
    code, err = run_cli(capsys, "check", "--example", "unet", json_path=tmp_path)
    assert code == 2
    assert_one_line(err, "is a directory")


def test_read_only_json_folder(capsys, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        code, err = run_cli(capsys, "check", "--example", "unet", json_path=ro / "r.json")
        assert code == 2
        assert_one_line(err, "not writable")
    finally:
        os.chmod(ro, 0o700)


def test_unknown_example_and_usage(capsys):
    code, err = run_cli(capsys, "check", "--example", "nope")
    assert code == 2
    assert_one_line(err, "drifttui examples")
    code, _ = run_cli(capsys, "check", "--samples", "notanumber")
    assert code == 2


def test_no_traceback_without_debug_subprocess(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "drifttui", "check", str(tmp_path / "x.py") + ":f"],
                       capture_output=True, text=True, env=env, cwd=str(ROOT))
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "drifttui", "check", str(tmp_path / "x.py") + ":f", "--debug"],
                       capture_output=True, text=True, env=env, cwd=str(ROOT))
    assert p.returncode != 0
    assert "Traceback" in p.stderr


def test_a_failing_torchscript_export_prints_nothing_on_stdout(tmp_path, capfd):
    """torch's TorchScript exporter prints its graph to file descriptor 1 when an export fails (its
    ONNX log is turned on by mistake): drifttui's export silences it, so `--json -` stays JSON."""
    import torch

    from drifttui.core.model.export import export_model
    from drifttui.errors import ModelError

    class LogAddExp(torch.nn.Module):          # no TorchScript symbolic for aten::logaddexp
        def forward(self, x, y):
            return torch.logaddexp(x, y)

    capfd.readouterr()
    with pytest.raises(ModelError):
        export_model(LogAddExp(), (torch.randn(2), torch.randn(2)), {}, "torchscript", tmp_path)
    out = capfd.readouterr().out
    assert "Torch IR graph" not in out and out == ""
    torch._C._jit_set_onnx_log_enabled(True)        # as torch's own exporter leaves it after an export
    with pytest.raises(ModelError):
        export_model(LogAddExp(), (torch.randn(2), torch.randn(2)), {}, "torchscript", tmp_path)
    assert capfd.readouterr().out == ""


def test_version_prints_the_installed_version_and_exits_0(capsys):
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"drifttui {version('drifttui')}"
    # a subcommand's --version V is the served model's version, not this
    assert main(["check", "--version"]) == 2
