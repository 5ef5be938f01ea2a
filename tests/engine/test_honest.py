"""Issue 22, honest verdicts: what the numbers alone hide is said (items 7 and 10).

Each case is a real torch model and an ONNX file edited the way deployed files differ from the
export: the final Cast to int64 removed (the deployed output is float32), a Relu removed before
a Sqrt (ONNX Runtime gives NaN on the rare samples with a value below -3)."""
from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper
from torch import nn

from tests.ci.conftest import run_cli

MODELS = '''
import torch
from torch import nn


class IntOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return (self.fc(x) * 10).round().to(torch.int64)


class Sqrt(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        return torch.sqrt(torch.relu(x) + 3.0) + 0 * self.fc(x)


def intout():
    torch.manual_seed(0)
    return IntOut().eval()


def sqrt():
    torch.manual_seed(0)
    return Sqrt().eval()
'''


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("honest")
    (folder / "models.py").write_text(MODELS)
    import importlib.util

    spec = importlib.util.spec_from_file_location("honest_models", folder / "models.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(mod.intout(), (torch.randn(1, 4),), str(folder / "int.onnx"), dynamo=False,
                          input_names=["x"], output_names=["y"])
        torch.onnx.export(mod.sqrt(), (torch.randn(1, 64),), str(folder / "sqrt.onnx"), dynamo=False,
                          input_names=["x"], output_names=["y"])
    # the deployed int model lost its final Cast: its output is float32
    p = onnx.load(str(folder / "int.onnx"))
    cast = next(n for n in p.graph.node if n.op_type == "Cast")
    p.graph.node.remove(cast)
    for n in p.graph.node:
        n.output[:] = ["y" if o == cast.input[0] else o for o in n.output]
    p.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    onnx.save(p, str(folder / "int-float.onnx"))
    # the deployed sqrt model lost its Relu: sqrt(x + 3) is NaN where x < -3
    p = onnx.load(str(folder / "sqrt.onnx"))
    relu = next(n for n in p.graph.node if n.op_type == "Relu")
    p.graph.node.remove(relu)
    for n in p.graph.node:
        n.input[:] = [relu.input[0] if i == relu.output[0] else i for i in n.input]
    onnx.save(p, str(folder / "sqrt-nan.onnx"))
    out["int"] = (f"{folder / 'models.py'}:intout", str(folder / "int-float.onnx"))
    out["nan"] = (f"{folder / 'models.py'}:sqrt", str(folder / "sqrt-nan.onnx"))
    out["folder"] = folder
    return out


def test_an_output_dtype_mismatch_is_never_a_silent_ok(files):
    model, path = files["int"]
    report = files["folder"] / "int.json"
    run = run_cli(["check", model, "--onnx", path, "--inputs", "shape:1x4", "--samples", "3", "--json", str(report)])
    head = run.out.splitlines()[:3]
    assert any("output y: dtype differs: torch int64, ONNX float32" in line for line in head), run.out
    data = json.loads(report.read_text())
    assert data["outputs"][0]["dtype"] == "int64" and data["outputs"][0]["onnx_dtype"] == "float32"
    assert any("dtype differs" in n for n in data["notes"])


def test_nan_in_some_onnx_samples_is_named_in_the_headline(files):
    model, path = files["nan"]
    report = files["folder"] / "nan.json"
    run = run_cli(["check", model, "--onnx", path, "--inputs", "shape:1x64", "--samples", "12", "--json",
                   str(report)])
    data = json.loads(report.read_text())
    bad = data["outputs"][0]["nan_samples"]
    # which samples: those with an input below -3 (sample i is drawn with seed i)
    expected = [i for i in range(12) if (_draw(i) < -3).any()]
    assert bad == expected and 0 < len(bad) < 12
    assert run.code == 1
    head = "\n".join(run.out.splitlines()[:3])
    assert "output y: ONNX Runtime gave NaN/Inf where torch is finite in" in head
    assert ", ".join(map(str, bad[:5])) in head
    assert data["notes"][0].startswith("output y: ONNX Runtime gave NaN/Inf")    # first: the TUI shows it


def _draw(i: int) -> np.ndarray:
    torch.manual_seed(i)
    return torch.randn(1, 64).numpy()


DROPOUT = '''
import torch
from torch import nn


class Drop(nn.Module):
    def __init__(self, active=True):
        super().__init__()
        self.active = active
        self.fc = nn.Linear(16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(nn.functional.dropout(self.fc(x), 0.5, training=self.active))


def build():        # dropout left active: torch differs from itself
    torch.manual_seed(0)
    return Drop().eval()


def deployed():     # what was exported: the same weights, no dropout
    torch.manual_seed(0)
    return Drop(active=False).eval()
'''


def test_a_non_deterministic_torch_side_is_said_and_the_export_not_blamed(tmp_path):
    # issue 22, item 8: "DRIFT, no origin" (or an origin in the export) with nothing else
    import importlib.util

    (tmp_path / "drop.py").write_text(DROPOUT)
    spec = importlib.util.spec_from_file_location("drop_model", tmp_path / "drop.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(mod.deployed(), (torch.randn(1, 16),), str(tmp_path / "drop.onnx"), dynamo=False,
                          input_names=["x"])
    report = tmp_path / "r.json"
    run = run_cli(["check", f"{tmp_path / 'drop.py'}:build", "--onnx", str(tmp_path / "drop.onnx"),
                   "--inputs", "shape:1x16", "--samples", "3", "--json", str(report)])
    data = json.loads(report.read_text())
    assert data["drift_origin"] is None
    assert data["notes"][0].startswith("the torch side is not deterministic: two torch forwards of sample 0")
    assert "first module whose output differs between two forwards: out" in data["notes"][0]
    assert "the torch side is not deterministic" in " ".join(run.out.splitlines()[:3])
    # the deployed model itself is deterministic: no such note, the verdict is its own
    run = run_cli(["check", f"{tmp_path / 'drop.py'}:deployed", "--onnx", str(tmp_path / "drop.onnx"),
                   "--inputs", "shape:1x16", "--samples", "3", "--json", str(report)])
    assert run.code == 0 and not any("not deterministic" in n for n in json.loads(report.read_text())["notes"])


def test_the_ci_outputs_carry_what_the_verdict_hides(files):
    model, path = files["int"]
    md = files["folder"] / "int.md"
    run = run_cli(["check", model, "--onnx", path, "--inputs", "shape:1x4", "--samples", "2", "--markdown", str(md)],
                  actions="true")
    assert any(line.startswith("::warning") and "dtype differs" in line for line in run.out.splitlines())
    assert "- **warning:** output y\\: dtype differs\\: torch int64, ONNX float32" in md.read_text()
