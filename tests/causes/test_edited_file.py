"""A user's file its own exporter does not write (``propose/reexport/edited.py``): changed after its export.

A TorchScript file at opset 17 whose one ``Sub`` had its operands swapped after the export (what a graph tool in a
deployment pipeline, or a hand edit, does to a file): the origin is the pooling block, and the re-export that
verifies is the file's own exporter at the file's own opset, so the cause is ``versions`` ("changed after its
export"), not a lowering that the next opset gets right (what drifttui said before: the first re-export tried for a
pinned TorchScript file was one opset up).  The same file with another torch named as its producer is told as made
by that torch.  ``repair`` grafts the re-export, and the repaired file checks ok.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import onnx
import pytest
import torch
from torch import nn

SPEC = Path(__file__).resolve()


class Pool(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x) - x


class Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.norm, self.pooling = nn.GroupNorm(1, c), Pool()
        self.mlp = nn.Sequential(nn.Conv2d(c, c, 1), nn.GELU(), nn.Conv2d(c, c, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.pooling(self.norm(x))
        return x + self.mlp(x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.blocks = nn.Sequential(*[Block(8) for _ in range(3)])
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def model() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


def rows(seed: int = 0) -> torch.Tensor:
    return torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(seed))


def _edited(tmp: Path, producer: str = "") -> Path:
    raw, out = tmp / "raw.onnx", tmp / "edited.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model(), (rows(),), str(raw), dynamo=False, opset_version=17)
    proto = onnx.load(str(raw))
    sub = next(n for n in proto.graph.node if n.op_type == "Sub" and "blocks.1/pooling" in n.name)
    sub.input[0], sub.input[1] = sub.input[1], sub.input[0]
    if producer:
        proto.producer_version = producer
    onnx.save(proto, str(out))
    return out


def _explained(tmp: Path, producer: str = "") -> tuple:
    from drifttui.core.result import Config
    from tests.causes.conftest import explained_run

    path = _edited(tmp, producer)
    return explained_run(Config(model=f"{SPEC}:model", onnx=str(path), inputs=f"{SPEC}:rows", samples=2))


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    return _explained(tmp_path_factory.mktemp("edited"))


def test_a_file_changed_after_its_export_is_told_as_such_not_as_a_lowering(edited):
    _, _, run, result, exp = edited
    assert result.drift_origin.module == "blocks.1.pooling"
    head = exp.findings[0]
    assert (head.check, head.verified) == ("versions", True), (head.check, head.message)
    assert "changed after its export" in head.message and "Sub /blocks/blocks.1/pooling/Sub" in head.message
    assert "opset 18" not in head.message and "opset_version=17" in head.fix and "--reference-onnx" in head.fix


def test_the_file_changed_after_its_export_is_repaired(edited):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, _, exp = edited
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


def test_a_file_another_torch_made_is_told_by_its_producer(tmp_path):
    _, _, _, result, exp = _explained(tmp_path, producer="2.1.0")
    head = exp.findings[0]
    assert (result.drift_origin.module, head.check, head.verified) == ("blocks.1.pooling", "versions", True)
    assert "pytorch 2.1.0 made it" in head.message and "changed after its export" not in head.message
    assert "today's torch" in head.fix
