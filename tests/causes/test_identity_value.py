"""A call torch computes as the identity (``x * 1.0``) is found at its input's value, and the file's own node for it
holds that value too: a lowering that reads that node is no leak into the input's lowering (``align_graph.leaked``
takes the values that hold a call's value as closely as its found one).

The fuzzer's program 5030 (``benchmarks/fuzz_drifts.py``): ``F.pairwise_distance(x * 1.0, y, p=inf)`` exported by
the TorchScript exporter reads the file's ``Mul`` of ``x * 1.0``; the call was found at ``x``, so that ``Mul`` looked
like a value inside the lowering of ``y``'s ``sub``, and the finding said "in torch's sub".
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn


class Distance(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * 1.0
        d = F.pairwise_distance(h, h.flip(-1) * 0.75 - 0.1, p=float("inf"), eps=1e-6, keepdim=True)
        return torch.cat([d, h[:, 1:]], 1)


class ScaledDistance(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(32, 32), Distance()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)        # the feed, /Mul_output_0, sorts before the body's values


def model() -> nn.Module:
    torch.manual_seed(0)
    return ScaledDistance().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the re-exports the explanation tries
def test_the_distance_is_named_not_the_sub_of_its_other_operand(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified, head.message
    assert head.torch_op == "torch.pairwise_distance", head.message
