"""A patch whose every node computes what torch computes is tried after the others (``conclude._contradicted``).

``(x * 100).long() >> 1`` exported by the TorchScript exporter is ``Cast`` (truncates, as torch's ``.long()``
does) then ``Div`` by 2 (truncates, where torch's shift floors).  The dtype check's own patch floors the ``Cast``
and verifies by an identity: ``floor(a) / 2`` truncated equals ``trunc(a) >> 1`` for every negative non-integer
``a``.  Its story, "Cast to int64 truncates towards zero where torch floors", is contradicted by the values: the
``Cast``'s output equals torch's ``.long()``.  The patch at the ``Div``, the node of the call the alignment names,
is now tried first and tells the shift (the fuzzer's program 3049, ``benchmarks/fuzz_drifts.py``).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn


class ShiftAfterLong(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((self.stem(x) * 100.0).long() >> 1).float()


def model() -> nn.Module:
    torch.manual_seed(0)
    return ShiftAfterLong().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.conftest import explained_small

    return explained_small(tmp_path_factory.mktemp("contradicted"), __file__, model, rows)


@pytest.mark.drifts        # 20 s: the patches the explanation tries
def test_the_shift_is_told_not_the_cast_its_values_vouch_for(explained):
    _, _, _, res, exp = explained
    head = exp.findings[0]
    assert head.verified and head.check == "lowering", head.message
    assert head.patch.get("rewrite") == "floor_div", head.patch
    assert "torch called >>" in head.message and "Cast" not in head.message.split(":")[1], head.message


def test_a_patch_on_nodes_the_values_vouch_for_is_contradicted():
    from drifttui.core.explain.causes.conclude import _contradicted
    from drifttui.core.explain.causes.locate.torch_align import TorchOp
    from drifttui.core.onnx.edit.patches import Patch

    class Loc:
        torch_op = TorchOp("torch.Tensor.__rshift__", ["/Div"], ["Div"], "values")
        torch_calls = {"/Cast": ("torch.Tensor.long", "aten._to_copy.default"), "/Mul": ("torch.Tensor.mul", None)}

    def patch(*nodes: str) -> Patch:
        return Patch({"op": "rewrite", "rewrite": "x"}, "dtype", "why", "fix", nodes=list(nodes))

    assert _contradicted(patch("/Cast"), Loc())
    assert not _contradicted(patch("/Div"), Loc())              # the wrong call's node
    assert not _contradicted(patch("/Cast", "/Div"), Loc())
    assert not _contradicted(patch("/Other"), Loc())            # a node no found call computes
    Loc.torch_op = TorchOp("torch.Tensor.__rshift__", ["/Div"], ["Div"], "fx")
    assert not _contradicted(patch("/Cast"), Loc())             # the FX record orders a dynamo file's patches
