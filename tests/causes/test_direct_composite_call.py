"""An ATen op called directly that torch decomposes before it reaches the exporter is named by the op called.

The fuzzer's source-derived pool, seed 31106 (fuzzH's held-out range, dynamo): ``aten.argsort.default`` of int64 with
ties, told "in torch's sort (aten.sort.default; ONNX TopK)".  ``argsort`` is CompositeImplicitAutograd: the decomposed
program's FX node is ``aten.sort``, and its ``original_aten`` is ``aten.sort`` too (the decomposition's own op, not the
call's), so ``called`` fell back to the piece.  The record of the call (``torch_fn``: ``OpOverload.argsort.default``)
says which ATen op the forward called; ``fx_localise`` reads it before ``original_aten``.
"""
from __future__ import annotations

import torch
from torch import nn


class DirectArgsort(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.argsort.default((x * 100).long(), -1, False).float()


class DirectBce(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.binary_cross_entropy_with_logits.default(x, torch.sigmoid(x))


def _program(module: nn.Module) -> list[tuple]:
    from drifttui.core.explain.causes.locate.fx_localise import _program_values

    x = torch.randn(6, 32)
    gm = torch.export.export(module, (x,)).run_decompositions().module()
    return _program_values(gm, [x])


def test_a_composite_aten_op_called_directly_is_the_aten_op_of_its_pieces():
    rows = _program(DirectArgsort())
    sort = [r for r in rows if r[1] == "aten.sort.default"]
    assert sort and all(r[4] == "aten.argsort.default" for r in sort), [r[1:2] + r[3:5] for r in rows]


def test_the_pieces_of_a_direct_call_decomposed_by_the_exporter_still_name_it():
    rows = _program(DirectBce())
    pieces = [r for r in rows if r[1] not in ("aten.sigmoid.default",)]
    assert pieces and all(r[4] == "aten.binary_cross_entropy_with_logits.default" for r in pieces), \
        [r[1:2] + r[3:5] for r in rows]


def test_an_ATen_op_of_a_torch_call_is_unchanged():
    class Plain(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.argsort((x * 100).long(), -1).float()

    rows = _program(Plain())
    sort = [r for r in rows if r[1] == "aten.sort.default"]
    assert sort and all(r[3] == "torch.argsort" for r in sort)
