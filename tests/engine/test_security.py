"""Security (issue 10): no code from a model/inputs file runs unless the user says to trust it;
external data stays inside the ONNX file's folder; nothing is written next to the user's code.
Every hostile file is built by the test itself; a payload would create a marker file."""
import io
import os
import sys
import zipfile

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper
from onnx.external_data_helper import set_external_data

from drifttui.cli import main
from drifttui.core.model.loading import import_callable, load_onnx
from drifttui.core.model.spec import parse_callable
from tests.conftest import model_spec
from tests.engine.test_bad_input import assert_one_line, run_cli


class _Payload:
    """Unpickling this creates the marker file: the proof that code from the file ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


class _Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)


@pytest.fixture(scope="module")
def pt2_files(tmp_path_factory):
    """A genuine .pt2 and a malicious copy whose sample-inputs member is a pickle payload
    (torch.export.load retries that member with weights_only=False)."""
    d = tmp_path_factory.mktemp("pt2")
    torch.manual_seed(0)
    good = d / "good.pt2"
    torch.export.save(torch.export.export(_Lin().eval(), (torch.randn(2, 8),)), str(good))
    marker = d / "PWNED"
    payload = io.BytesIO()
    torch.save(_Payload(marker), payload)
    evil = d / "evil.pt2"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(evil, "w") as dst:
        members = src.namelist()
        assert any("sample_inputs" in n for n in members)
        for name in members:
            dst.writestr(name, payload.getvalue() if "sample_inputs" in name else src.read(name))
    return good, evil, marker, payload.getvalue()


def test_the_crafted_pt2_payload_is_live(pt2_files):
    # the member torch.export.load unpickles without weights_only does run code: the tests
    # below are meaningful only because of this
    _, _, marker, payload = pt2_files
    torch.load(io.BytesIO(payload), weights_only=False)
    assert marker.exists()
    marker.unlink()


def test_malicious_pt2_is_refused_and_runs_nothing(capsys, pt2_files):
    _, evil, marker, _ = pt2_files
    code, err = run_cli(capsys, "check", str(evil), "--inputs", "shape:2x8")
    assert code == 2
    assert_one_line(err, ".pt2", "--trust-model-file", "run code")
    assert not marker.exists()


def test_trusted_pt2_loads_and_compares(capsys, pt2_files, tmp_path):
    good, _, _, _ = pt2_files
    code, err = run_cli(capsys, "check", str(good), "--inputs", "shape:2x8", "--samples", "2",
                        "--trust-model-file", json_path=tmp_path / "r.json")
    assert code == 0, err
    assert err.strip() == ""          # the loader's own log output does not reach the user
    assert (tmp_path / "r.json").is_file()


def test_trusted_but_broken_pt2_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    code, err = run_cli(capsys, "check", str(bad), "--inputs", "shape:2x8", "--trust-model-file")
    assert code == 2
    assert_one_line(err, "not an ExportedProgram")


def test_malicious_pt_model_runs_nothing(capsys, tmp_path):
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil.pt"
    torch.save(_Payload(marker), str(evil))
    code, err = run_cli(capsys, "check", str(evil), "--inputs", "shape:2x8")
    assert code == 2
    assert_one_line(err, "not a TorchScript file")
    assert not marker.exists()


def test_malicious_pt_inputs_run_nothing_and_say_so_in_one_line(capsys, tmp_path):
    marker = tmp_path / "PWNED"
    evil = tmp_path / "inputs.pt"
    torch.save({"x": torch.randn(2, 8), "evil": _Payload(marker)}, str(evil))
    code, err = run_cli(capsys, "check", model_spec("twice"), "--inputs", str(evil))
    assert code == 2
    assert_one_line(err, "weights_only refused it", "Unsupported global")
    assert not marker.exists()


# -- external data --------------------------------------------------------------------------
def _external_model(folder, location):
    """An Add of x and an 8-float initializer whose bytes live in the external file ``location``."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 8], vals=np.zeros(16, np.float32).tobytes(), raw=True)
    set_external_data(w, location=location, offset=0, length=64)
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], initializer=[w])
    path = folder / "model.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path


@pytest.fixture
def layout(tmp_path):
    model_dir = tmp_path / "model"
    outside = tmp_path / "secret"
    model_dir.mkdir()
    outside.mkdir()
    (outside / "data.bin").write_bytes(np.arange(16, dtype=np.float32).tobytes())
    return model_dir, outside


@pytest.mark.parametrize("kind", ["traversal", "traversal-missing", "absolute", "symlink", "symlinked-dir"])
def test_external_data_outside_the_folder_is_refused_with_one_message(capsys, layout, kind):
    model_dir, outside = layout
    if kind == "traversal":
        location = "../secret/data.bin"
    elif kind == "traversal-missing":
        location = "../secret/missing.bin"
    elif kind == "absolute":
        location = str(outside / "data.bin")
    elif kind == "symlink":
        os.symlink(outside / "data.bin", model_dir / "data.bin")
        location = "data.bin"
    else:
        os.symlink(outside, model_dir / "sub")
        location = "sub/data.bin"
    path = _external_model(model_dir, location)
    code, err = run_cli(capsys, "check", model_spec("twice"), "--onnx", str(path), "--inputs", "shape:2x8")
    assert code == 2
    # the same words whether the file outside exists or not: the message leaks nothing
    assert_one_line(err, "outside its folder", repr(location))


def test_external_data_inside_the_folder_loads(layout):
    model_dir, _ = layout
    (model_dir / "weights").mkdir()
    (model_dir / "weights" / "w.bin").write_bytes(np.arange(16, dtype=np.float32).tobytes())
    proto, path = load_onnx(_external_model(model_dir, "weights/w.bin"))
    w = onnx.numpy_helper.to_array(proto.graph.initializer[0], str(path.parent))   # read where it lies
    assert w.ravel().tolist() == list(range(16))


# -- no bytecode next to the user's files ---------------------------------------------------
def test_importing_user_code_writes_no_pycache(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)   # as for a user without PYTHONDONTWRITEBYTECODE
    (tmp_path / "helper_mod_i10.py").write_text("SCALE = 2.0\n")
    (tmp_path / "model.py").write_text(
        "import torch\nimport helper_mod_i10\n"
        "def build():\n    return torch.nn.Linear(8, 4)\n")
    (tmp_path / "data.py").write_text("import torch\ndef batch():\n    return torch.randn(2, 8)\n")
    try:
        assert import_callable(parse_callable(f"{tmp_path / 'model.py'}:build", "MODEL"), "MODEL")() is not None
        assert import_callable(parse_callable(f"{tmp_path / 'data.py'}:batch", "--inputs"), "--inputs")() is not None
        assert sys.dont_write_bytecode is False        # restored after the import
    finally:
        sys.modules.pop("helper_mod_i10", None)
    assert not list(tmp_path.rglob("__pycache__")), list(tmp_path.rglob("*"))
    assert not list(tmp_path.rglob("*.pyc"))


def test_json_over_the_onnx_file_is_refused(capsys, layout):
    # point 3 (outputs naming inputs) holds for --json: the ONNX file and its external data
    model_dir, _ = layout
    (model_dir / "w.bin").write_bytes(np.zeros(16, np.float32).tobytes())
    path = _external_model(model_dir, "w.bin")
    before = path.read_bytes()
    for target in (path, model_dir / "w.bin"):
        code = main(["check", model_spec("twice"), "--onnx", str(path), "--json", str(target)])
        err = capsys.readouterr().err
        assert code == 2
        assert_one_line(err, "is an input of this run")
    assert path.read_bytes() == before
