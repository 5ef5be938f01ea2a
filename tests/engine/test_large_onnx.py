"""ONNX files whose external data is over 2 GiB load and run (issue 22, item 14), and the ONNX
proto drifttui keeps never holds the weights (issue 21: the weights are read where they lie).

The >2 GiB model is cheap: one Gather from a 2 GiB + 1 KiB zero initializer whose external data
file is sparse (``truncate``), so nothing writes or reads 2 GiB; ONNX Runtime maps the file and
touches one page.  Before the fix the file was refused ("invalid: Failed to serialize proto"):
onnx's checker was given the in-memory proto with every weight loaded.
"""
import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.external_data_helper import uses_external_data

from drifttui.cli import main

ROWS = (1 << 27) + 64          # x 4 floats x 4 bytes = 2 GiB + 1 KiB of external data

MODEL_PY = '''
import torch


class Lookup(torch.nn.Module):
    """What the ONNX file computes: rows of a zero table."""

    def forward(self, idx):
        return torch.zeros(idx.shape[0], 4) + 0.0 * idx.unsqueeze(-1).float()


def lookup():
    return Lookup().eval()
'''


def _big_model(folder) -> "os.PathLike":
    nbytes = ROWS * 4 * 4
    data = folder / "big.onnx.data"
    with open(data, "wb") as f:
        f.truncate(nbytes)                     # sparse: zeros that take no disk space
    w = TensorProto(name="table", data_type=TensorProto.FLOAT, dims=[ROWS, 4])
    for key, value in (("location", "big.onnx.data"), ("offset", "0"), ("length", str(nbytes))):
        w.external_data.add(key=key, value=value)
    w.data_location = TensorProto.EXTERNAL
    graph = helper.make_graph([helper.make_node("Gather", ["table", "idx"], ["rows"], axis=0)], "big",
                              [helper.make_tensor_value_info("idx", TensorProto.INT64, ["n"])],
                              [helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["n", 4])],
                              initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "big.onnx"
    path.write_bytes(model.SerializeToString())
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    folder = tmp_path_factory.mktemp("big")
    (folder / "lookup.py").write_text(MODEL_PY)
    return _big_model(folder), folder / "lookup.py"


def test_onnx_file_with_over_2gib_of_external_data_is_checked(big, tmp_path, capsys):
    onnx_path, model_py = big
    out = tmp_path / "r.json"
    code = main(["check", f"{model_py}:lookup", "--onnx", str(onnx_path), "--inputs", "shape:int64:3",
                 "--samples", "2", "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    report = json.loads(out.read_text())
    assert report["verdict"] == "ok"
    assert "serialize" not in err


def test_loaded_proto_keeps_external_data_where_it_lies(big):
    from drifttui.core.model.loading import load_onnx

    onnx_path, _ = big
    proto, path = load_onnx(onnx_path)
    assert path == onnx_path
    table = next(t for t in proto.graph.initializer if t.name == "table")
    assert uses_external_data(table)             # not read into memory
    assert proto.ByteSize() < 1_000_000


def test_external_weights_are_read_from_their_file(tmp_path, capsys):
    """A model whose weights are external and not zero: the values reach ORT (a wrong offset or a
    missing folder would show as drift or an error), and the kept proto still points at the file."""
    import torch

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()
    torch.save(m.state_dict(), tmp_path / "w.pt")
    (tmp_path / "mlp.py").write_text(
        "import torch\n"
        "def mlp():\n"
        "    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))\n"
        f"    m.load_state_dict(torch.load({str(tmp_path / 'w.pt')!r}, weights_only=True))\n"
        "    return m.eval()\n")
    path = tmp_path / "mlp.onnx"
    proto = onnx.load_from_string(_export_bytes(m))
    onnx.save(proto, str(path), save_as_external_data=True, location="mlp.onnx.data", size_threshold=0)
    out = tmp_path / "r.json"
    code = main(["check", f"{tmp_path / 'mlp.py'}:mlp", "--onnx", str(path), "--inputs", "shape:1x64",
                 "--samples", "3", "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    report = json.loads(out.read_text())
    assert report["verdict"] == "ok"
    mapped = [layer for layer in report["layers"] if layer.get("onnx_values") and layer.get("metrics")]
    assert mapped, "no layer was compared"


def _export_bytes(m) -> bytes:
    import io

    import torch

    buf = io.BytesIO()
    torch.onnx.export(m, (torch.randn(1, 64),), buf, dynamo=False)
    return buf.getvalue()
