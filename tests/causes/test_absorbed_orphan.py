"""A module with no ONNX node whose computation its consumer absorbed, not dropped (``locate/case._absorbed_orphan``).

``prepare/plan/orphans.py`` stands an Identity for a call with no node between the value its consumer reads and that
consumer: right for a computation the exporter dropped (an in-place update lost through a view,
``test_forms_inplace.py``), whose consumer computes right on right values.  The TorchScript exporter's peephole
fuses ``nn.LogSoftmax(dim=2)`` and ``nn.NLLLoss`` into one SoftmaxCrossEntropyLoss in ``nll``'s scope: the
LogSoftmax has no node, and its consumer's node computes a log-softmax (over axis 1) of its own.  The Identity's
re-export verified on the Identity's value, and ``repair``'s copy drifted at the consumer, which normalised again
(forms40w's ``implicit_nll``).  When the orphan's consumer drifts on its own too, the orphan and its consumer are
one unit: the case is the nearest compared call holding both, its nodes all of theirs, and the re-export of that
call is verified and grafted.  The model is this module's own (``tests/causes/test_absorbed_orphan.py:tiny_nll``).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn


class _Loss(nn.Module):
    """per-position NLL of (6, 4, 4) scores whose log-softmax is taken over the last dim (dim 2), not the class dim."""

    def __init__(self) -> None:
        super().__init__()
        self.lsm = nn.LogSoftmax(dim=2)
        self.nll = nn.NLLLoss(reduction="none")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = torch.tensor([[1, 0, 3, 2]] * 6)
        return x + self.nll(self.lsm(x.view(6, 4, 4)), target).repeat(1, 4)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _Loss()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def tiny_nll() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 16)


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "test_absorbed_orphan")


@pytest.mark.drifts
def test_an_absorbed_log_softmax_is_verified_as_a_unit_and_repaired(explained):
    from tests.causes.form_suite import assert_verified_and_repaired

    assert_verified_and_repaired(explained, ("tiny_nll", "torchscript"),
                                 ("lowering", "reexport",
                                  {"exporter": "torchscript", "peephole": False, "module": "body"},
                                  "compared as one unit with the call that absorbed it"), "body.lsm")


@pytest.mark.drifts
def test_the_dynamo_file_lowers_the_two_calls_apart(explained):
    from tests.causes.form_suite import assert_clean

    assert_clean(explained, ("tiny_nll", "dynamo"))


@pytest.mark.drifts
def test_the_message_names_no_onnx_node_drifttui_made(explained):
    """the Identity standing for the orphan is drifttui's: the torch op's words list the file's ONNX ops only.  The
    TorchScript peephole pass fused the two calls (test_peephole_rewrite.py): the fused node is named, with the
    torch call it ends in."""
    head = explained("tiny_nll", "torchscript")[4].findings[0]
    assert "in torch's nll_loss (" in head.message and "ONNX SoftmaxCrossEntropyLoss)" in head.message, head.message
    assert "the peephole pass put SoftmaxCrossEntropyLoss where the lowering has LogSoftmax" in head.message
    assert "ONNX Identity" not in head.message and "drifttui_orphan" not in head.message, head.message
