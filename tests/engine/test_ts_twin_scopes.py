"""Two modules that TorchScript names alike.  A model that runs its layers as ``layer.forward(x)`` (transformers'
SqueezeBERT) never calls the layer itself: the layer has no scope, and the children of every layer are named
from the one scope above, ``attn`` and ``attn_1``, ``attn/fc`` and ``attn/fc_1`` (TorchScript makes a path unique
by a suffix on its last segment only, as for a shared layer: ts_callers.py).  Read as one module's scope, every
node of both layers went to one of them: the other layer was "fused" / "not exported" / dropped, and the clean
file was a false DRIFT at the last module of the first layer (SqueezeBERT: ``encoder.layers.0.output``, "ONNX
none (dropped)", max |d| 0.048 with the model outputs equal to 1.8e-7).  Each layer's modules must be compared
at their own values, and a weight planted in the first layer named there."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from torch import nn

from drifttui.core.pipeline import run_once
from drifttui.core.result import Config
from tests.models import off_identity

SPEC = f"{__file__}:twins"
INPUTS = "shape:2x5x8"


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + torch.tanh(self.fc(x)))


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = Block()
        self.out = Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.attn(x))


class Twins(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for layer in self.layers:
            h = layer.forward(h)        # not layer(h): the layer is never called, it has no scope
        return h


def twins() -> nn.Module:
    return off_identity(Twins)


MODULES = [f"layers.{i}.{b}{c}" for i in (0, 1) for b in ("attn", "out") for c in ("", ".fc", ".norm")]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("twins") / "twins_ts.onnx"
    torch.onnx.export(twins(), (torch.randn(2, 5, 8),), str(path), dynamo=False, opset_version=17)
    return path


def test_the_file_names_both_layers_alike(exported: Path):
    names = {n.name for n in onnx.load(str(exported)).graph.node}
    assert not any("layers" in n for n in names), sorted(names)     # the premise: no layer scope in the file
    assert any(n.startswith("/attn_1/") for n in names), sorted(names)


def test_each_layer_is_compared_at_its_own_values(exported: Path):
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(exported), samples=2)).result
    assert r.verdict == "ok", (r.drift_origin, [(L.module, L.status) for L in r.layers if L.status != "ok"])
    by = {L.module: L for L in r.layers}
    for m in MODULES:
        assert by[m].status == "ok" and by[m].onnx_values, (m, by[m].status, by[m].note)
    for m in MODULES:
        twin = m.replace("layers.0", "layers.1")
        if twin != m:
            assert by[m].onnx_values != by[twin].onnx_values, m
    assert r.coverage.unmapped == 0


def test_a_weight_in_the_first_layer_is_named_there(exported: Path, tmp_path: Path):
    model = onnx.load(str(exported))
    done = False
    for init in model.graph.initializer:
        if init.name == "layers.0.out.fc.weight" or (not done and init.name.startswith("onnx::MatMul")
                                                     and _is_weight_of(init, twins().layers[0].out.fc.weight)):
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.05), init.name))
            done = True
    assert done
    planted = tmp_path / "planted.onnx"
    onnx.save(model, str(planted))
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(planted), samples=2)).result
    assert r.verdict == "drift" and r.drift_origin.module == "layers.0.out.fc", r.drift_origin


def _is_weight_of(init: onnx.TensorProto, weight: torch.Tensor) -> bool:
    a = numpy_helper.to_array(init)
    w = weight.detach().numpy()
    return a.shape == w.T.shape and np.allclose(a, w.T)
