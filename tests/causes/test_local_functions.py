"""A file whose modules are ONNX model-local functions (``torch.onnx.export(..., export_modules_as_functions=...)``,
TorchScript; pytorch/pytorch#63589, #84490; batch 41F of session 41): its graph is call nodes, every value inside the
functions, so no module could be compared (the first run named ``head`` (ONNX ``DeepRes``: the whole graph one node)
the origin of a drift in ``body``).  drifttui inlines the functions in its in-memory copy, as ONNX Runtime does before
it runs the graph, each node named by the module it was called in (``onnx/functions.py``, ``prepare/inlined.py``).
Real torch exports and ONNX Runtime: the inlined graph computes what the file computes, is scoped by module (a
``ModuleList`` is never called: its items are), and every call of the model is mapped."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

SPEC = str(Path(__file__))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin, self.act = nn.Linear(8, 8), nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.lin(x))


class Net(nn.Module):
    """two blocks in a ModuleList (never called itself), a tanh, a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.head(torch.tanh(x))


def model() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


def rows() -> torch.Tensor:
    return torch.randn(3, 8)


def _export(path: Path, functions) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model(), (rows(),), str(path), dynamo=False, export_modules_as_functions=functions)
    return path


def _run(proto: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("functions", [True, {Block, nn.GELU}], ids=["all", "some"])
def test_inlined_functions_compute_what_the_file_computes_and_are_named_by_module(tmp_path, functions):
    from drifttui.core.prepare.inlined import inline_local_functions

    proto = onnx.load(str(_export(tmp_path / "f.onnx", functions)))
    assert len(proto.functions) > 0
    x = rows().numpy()
    want = _run(proto, x)
    notes = inline_local_functions(proto, model())
    assert len(proto.functions) == 0 and "local functions" in notes[0]
    onnx.checker.check_model(proto)
    np.testing.assert_array_equal(_run(proto, x), want)
    names = [n.name for n in proto.graph.node]
    assert "/blocks.0/act/Gelu" in names and "/head/Gemm" in names, names           # TorchScript's own scopes
    # a module without a function of its own inside one (``lin`` in ``Block`` when only Block is a function): the
    # function body does not say which module its nodes came from, so they are the function's module's own
    assert ("/blocks.1/lin/Gemm" if functions is True else "/blocks.1/Gemm") in names, names


def test_every_call_of_a_file_of_local_functions_is_mapped(tmp_path):
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    path = _export(tmp_path / "f.onnx", True)
    prepared = prepare(Config(model=f"{SPEC}:model", onnx=str(path), inputs=f"{SPEC}:rows", samples=1))
    status = {prepared.calls[cm.call].module: cm.status for cm in prepared.plan.calls}
    assert all(s == "ok" for s in status.values()), status
    assert {"blocks.0.lin", "blocks.1.act", "head"} <= set(status)
