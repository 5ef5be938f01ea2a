"""An ATen op called directly (``torch.ops.aten.clamp.Tensor(...)``) is named by its op, not by its overload.

The fuzzer's source-derived pool (``benchmarks/fuzz_schema.py``, seeds 20051 and 20005) calls the ops the exporters
lower through their schemas.  Where the TorchScript exporter's lowering drifted, the head finding opened "in torch's
Tensor (torch.Tensor.clamp.Tensor, aten.clamp.Tensor; ...)" and "in torch's default
(torch._ops.aten.logsumexp.default, ...)": ``call_name`` read an OpOverload's ``__name__`` (``clamp.Tensor``) as a
function's, a method's when its overload is called ``Tensor``.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn


def test_an_op_overload_is_spelled_as_its_aten_op():
    from drifttui.core.explain.causes.locate.torch_align import TorchOp
    from drifttui.core.explain.causes.locate.torch_call import aten_of, call_name

    for op, want in ((torch.ops.aten.clamp.Tensor, "aten.clamp.Tensor"),
                     (torch.ops.aten.logsumexp.default, "aten.logsumexp.default"), (torch.ops.aten.clamp, "aten.clamp")):
        assert call_name(op) == want
        assert TorchOp(call_name(op)).name == op.__name__.split(".")[0]
    assert aten_of("aten.clamp.Tensor", ["aten.clamp.Tensor", "aten._to_copy.default"]) == "aten.clamp.Tensor"
    assert call_name(torch.clamp) == "torch.clamp" and call_name(torch.Tensor.clamp) == "torch.Tensor.clamp"


def test_a_decomposed_aten_call_is_named_by_the_op_called_not_by_a_piece_of_it():
    """``torch.ops.aten.binary_cross_entropy_with_logits.default(x, y)`` exported by the dynamo exporter: the wrong FX
    node is the ``aten.log_sigmoid`` of its decomposition, whose record has no torch call to read (an OpOverload);
    the finding opened "in torch's log_sigmoid (aten.log_sigmoid.default, aten.binary_cross_entropy_with_logits...)"
    (seed 22017).  The op before the exporter's decompositions (``original_aten``) is the op the forward called."""
    from types import SimpleNamespace

    from drifttui.core.explain.causes.locate.torch_align import named

    bce = "aten.binary_cross_entropy_with_logits.default"
    wrong = SimpleNamespace(call="", target="aten.log_sigmoid.default", aten=bce, nodes=["n0"], op_types=["Sigmoid"])
    op = named(SimpleNamespace(wrong=wrong, matched=3))
    assert op.target == bce and op.name == "binary_cross_entropy_with_logits" and op.aten == bce
    assert op.words().startswith("torch's binary_cross_entropy_with_logits (")
    wrong.call = "torch.nn.functional.binary_cross_entropy_with_logits"          # a call as written: its own name
    assert named(SimpleNamespace(wrong=wrong, matched=3)).target == wrong.call
    wrong.call, wrong.aten = "", ""                                              # nothing but the FX node's target
    assert named(SimpleNamespace(wrong=wrong, matched=3)).target == "aten.log_sigmoid.default"


class Clamped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x) * 30.0
        return torch.ops.aten.clamp.Tensor((h * 100).long(), h, None).float()


def model() -> nn.Module:
    torch.manual_seed(0)
    return Clamped().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the explanation's patches and re-exports
def test_the_finding_names_the_op_called(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows)
    assert res.verdict != "ok" and res.drift_origin is not None
    head = exp.findings[0]
    assert "torch's clamp" in head.message and "torch's Tensor" not in head.message, head.message
    assert "torch.Tensor.clamp.Tensor" not in head.message
