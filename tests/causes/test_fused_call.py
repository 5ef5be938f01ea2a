"""The torch call named for a node an exporter fused from several calls (``locate/align_graph.fused_into``).

The TorchScript exporter's ONNX peephole (``fuseLogSoftmaxNllLoss``) rewrites ``LogSoftmax -> Transpose -> NLL`` into
one ``SoftmaxCrossEntropyLoss`` that reads the input of the node before the LogSoftmax: a pointer loss's
``scores / sqrt(d)`` then ``log_softmax(-1)``, ``transpose(1, 2)`` and ``nll_loss`` become one node reading the
unscaled scores.  The alignment by value found no value of the ``div``'s and named it, the first call the file does
not hold (forms40w's ``pointer_nll``: "in torch's div").  The call a fused node stands for is the later call whose
value it makes, read from the first call's inputs: ``nll_loss``.  On a bare graph (the alignment's own records) and
on a small model exported by the TorchScript exporter (behind ``drifts``)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn


def _case(with_div: bool = False, reads_scores: bool = True):
    """x -> Unsqueeze -> u -> [Div -> d] -> SoftmaxCrossEntropyLoss(u or x, t) -> loss, and torch's calls of it."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsq")]
    if with_div:
        nodes.append(helper.make_node("Div", ["u", "four"], ["d"], name="div"))
    nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", ["u" if reads_scores else "v", "t"], ["loss"],
                                  name="sce", reduction="none"))
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [6, 6]), vi("v", TensorProto.FLOAT, [1, 6, 6]),
                                       vi("t", TensorProto.INT64, [1, 6])], [vi("loss", TensorProto.FLOAT, [1, 6])])
    x = np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32)
    u = x[None]
    t = np.array([[2, 0, 5, 1, 3, 4]])
    logp = torch.log_softmax(torch.from_numpy(u) / 4, -1)
    loss = F.nll_loss(logp.transpose(1, 2), torch.from_numpy(t), reduction="none").numpy()
    ops = [("placeholder", "x", x, [], "float32"), ("call_function", "torch.Tensor.unsqueeze", u, [0], "float32"),
           ("call_function", "torch.Tensor.__truediv__", u / 4, [1], "float32"),
           ("call_function", "torch.nn.functional.log_softmax", logp.numpy(), [2], "float32"),
           ("call_function", "torch.Tensor.transpose", logp.transpose(1, 2).numpy(), [3], "float32"),
           ("call_function", "torch.nn.functional.nll_loss", loss, [4], "float32"), ("output", "output", None, [5], "")]
    file_loss = F.cross_entropy(torch.from_numpy(u), torch.from_numpy(t), reduction="none").numpy()  # over axis 1
    vals = {"x": x, "u": u, "loss": file_loss, **({"d": u / 4} if with_div else {})}
    return SimpleNamespace(model=helper.make_model(g)), ops, {0: "x", 1: "u"}, vals


def test_a_call_fused_with_later_ones_is_named_by_the_call_the_fused_node_computes():
    from drifttui.core.explain.causes.locate.align_graph import fused_into

    case, ops, found, vals = _case()
    assert fused_into(case, ops, found, 2, vals, {1, 2, 3, 4, 5}) == 5      # the nll_loss, not the div


def test_a_call_whose_value_the_file_holds_otherwise_stays_named():
    from drifttui.core.explain.causes.locate.align_graph import fused_into

    case, ops, found, vals = _case(with_div=True)       # a Div node makes a value of the div's shape: its own lowering
    assert fused_into(case, ops, found, 2, vals, {1, 2, 3, 4, 5}) == 2


def test_a_later_node_that_does_not_read_the_calls_inputs_is_no_fusion_of_it():
    from drifttui.core.explain.causes.locate.align_graph import fused_into

    case, ops, found, vals = _case(reads_scores=False)  # the loss node reads another input: the div's nodes are lost
    assert fused_into(case, ops, found, 2, vals, {1, 2, 3, 4, 5}) == 2


class _Pointer(nn.Module):
    """a pointer loss over 6 positions: scaled scores, ``log_softmax`` over the keys, ``transpose(1, 2)``, NLL."""

    def __init__(self) -> None:
        super().__init__()
        self.query, self.key = nn.Linear(16, 8), nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = (self.query(x) @ self.key(x).t()).unsqueeze(0) / 8 ** 0.5
        target = torch.tensor([[2, 0, 5, 1, 3, 4]])
        loss = F.nll_loss(F.log_softmax(scores, -1).transpose(1, 2), target, reduction="none")
        return x + loss.reshape(6, 1)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _Pointer()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def tiny_pointer() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 16)


@pytest.mark.drifts
def test_the_torchscript_pointer_loss_is_told_by_nll_loss(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    _, _, _, result, exp = explained_forms(tmp_path_factory, "test_fused_call")("tiny_pointer", "torchscript")
    head = exp.findings[0]
    assert result.drift_origin.module == "body" and head.severity == "error" and head.verified
    assert head.torch_op == "torch.nn.functional.nll_loss", (head.torch_op, head.message)
    assert "ONNX SoftmaxCrossEntropyLoss)" in head.message, head.message
