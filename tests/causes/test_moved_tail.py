"""A lowering that goes on after a value equal to torch's, inside a call that only moves values, is named by the
call whose lowering it is (``align_graph.moved_tail``).

``torch.cdist(x, y, p=0)`` counts the elements that differ.  The TorchScript exporter lowers it as
``Pow(ReduceSum(Pow(|x - y|, 0)), 1/0)``: the ``ReduceSum`` equals torch's count, and ``Pow(count, inf)`` makes it
inf in the nodes of the ``cat`` that follows (the fuzzer's program 1006, ``benchmarks/fuzz_drifts.py``).  Before,
the finding said "in torch's cat"; the op named must be the one that was called.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.drifts       # 33 s: the re-exports the explanation tries


class CdistCat(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        d = torch.cdist(h, h.flip(-1) * 0.75 - 0.1, p=0.0)
        return torch.cat([d.reshape(6, -1)[:, :6], h[:, 6:]], 1)


def model() -> nn.Module:
    torch.manual_seed(0)
    return CdistCat().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.conftest import explained_small

    return explained_small(tmp_path_factory.mktemp("moved_tail"), __file__, model, rows)


def test_the_call_whose_lowering_goes_on_in_a_cat_is_named(explained):
    _, _, run, res, exp = explained
    assert res.drift_origin is not None and res.drift_origin.module == ""
    head = exp.findings[0]
    assert head.verified and head.check == "lowering"
    assert head.torch_op == "torch.cdist", head.message
    assert head.message.startswith("in torch's cdist"), head.message
    assert "torch's cat" not in head.message
