"""One module object registered under several names.  timm's CoaT-Lite registers a stage's convolutional position
encoding as ``cpe1`` and in every block of the stage as ``cpe`` (``shared_cpe``); each block calls it.  TorchScript
names a module by its first name (``named_modules()`` keeps one name per object), so a block's call is scoped
``/serial_blocks1.0/cpe1/...``; the scope resolution looked below the block for a module named ``cpe1``, found
``serial_blocks1.0.cpe`` only, and gave the nodes to the block: ``cpe1`` "ONNX none (dropped)", a false DRIFT on
the clean file, and a weight planted in it named at the same false place.  Then, once resolved, the two calls
were keyed in the order the file first names them, which a shared weight's scope-less Identity (its scope filled
in from its reader in the second block) put the wrong way round.  Each call must be compared at its own values,
and a planted weight named at the first call (dynamo too)."""
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

SPEC = f"{__file__}:shared"
INPUTS = "shape:2x5x8"


class Encoding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tanh(self.proj(x))


class Block(nn.Module):
    def __init__(self, cpe: nn.Module) -> None:
        super().__init__()
        self.cpe = cpe                      # the stage's one encoding, registered here under a second name
        self.fc = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.cpe(x)
        return self.norm(x + torch.tanh(self.fc(x)))


class Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.cpe1 = Encoding()              # its first name: the one TorchScript's scopes and the hooks use
        self.blocks = nn.ModuleList([Block(self.cpe1), Block(self.cpe1)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = block(h)
        return h


def shared() -> nn.Module:
    return off_identity(Shared)


@pytest.fixture(scope="module", params=["torchscript", "dynamo"])
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    path = tmp_path_factory.mktemp("shared") / f"shared_{request.param}.onnx"
    torch.onnx.export(shared(), (torch.randn(2, 5, 8),), str(path), dynamo=request.param == "dynamo",
                      opset_version=17 if request.param == "torchscript" else 18)
    return request.param, path


def test_the_file_names_the_blocks_calls_by_the_first_name(exported: tuple[str, Path]):
    exporter, path = exported
    if exporter != "torchscript":
        pytest.skip("TorchScript's node names carry the scope")
    names = {n.name for n in onnx.load(str(path)).graph.node}
    assert "/blocks.0/cpe1/proj/MatMul" in names and "/blocks.1/cpe1/proj/MatMul" in names, sorted(names)


def test_each_call_is_compared_at_its_own_values(exported: tuple[str, Path]):
    _, path = exported
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(path), samples=2)).result
    assert r.verdict == "ok", (r.drift_origin, [(L.module, L.status, L.note) for L in r.layers if L.status != "ok"])
    assert r.coverage.unmapped == 0 and r.coverage.fused == 0, r.coverage
    calls = [L for L in r.layers if L.module in ("cpe1", "cpe1.proj")]
    assert len(calls) == 4 and all(L.status == "ok" and L.onnx_values for L in calls), calls
    assert calls[0].onnx_values != calls[2].onnx_values and calls[1].onnx_values != calls[3].onnx_values


def test_a_weight_planted_in_the_shared_module_is_named_at_its_first_call(exported: tuple[str, Path],
                                                                          tmp_path: Path):
    exporter, path = exported
    model = onnx.load(str(path))
    weight = shared().cpe1.proj.weight.detach().numpy()
    planted = [init for init in model.graph.initializer if _holds(init, weight)]
    assert len(planted) == 1, [i.name for i in model.graph.initializer]
    init = planted[0]
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.05), init.name))
    out = tmp_path / "planted.onnx"
    onnx.save(model, str(out))
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(out), samples=2)).result
    assert r.verdict == "drift" and r.drift_origin.module == "cpe1.proj", (exporter, r.drift_origin)
    first = next(L for L in r.layers if L.module == "cpe1.proj")
    assert r.drift_origin.onnx_values == first.onnx_values, (r.drift_origin, first)


def _holds(init: onnx.TensorProto, weight: np.ndarray) -> bool:
    a = numpy_helper.to_array(init)
    return (a.shape == weight.shape and np.allclose(a, weight)) or (a.shape == weight.T.shape
                                                                     and np.allclose(a, weight.T))
