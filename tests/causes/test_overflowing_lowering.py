"""A wrong FX node that is the function in a form that overflows is told as ``stability`` (``locate/overflow.py``).

The fuzzer's source-derived pool, seeds 28042 and 28073 (dynamo): ``aten.logaddexp2.default`` of inputs in the
hundreds (or at x1e4).  torchlib lowers it as ``Log(Pow(2, a) + Pow(2, b)) / ln 2``: ``Pow`` overflows to inf where
torch's value is finite.  The re-export after torch's core ATen decompositions verified, and the head finding said
``lowering`` ("the exporter's lowering of torch's aten.logaddexp2.default is wrong"), where the mechanism is the
unstable form of the same function (the catalogue's ``logaddexp`` rewrite says ``stability`` for the natural base).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from drifttui.core.explain.causes.locate.overflow import overflow_node as _overflow_node

LN2 = np.float32(np.log(2.0))


def _file(combine: str):
    """``Log(Pow(2, a) <combine> Pow(2, b)) / ln 2``: Add is logaddexp2's textbook form, Mul is a + b (another
    function)."""
    nodes = [helper.make_node("Pow", ["two", "a"], ["pa"], name="pow_a"),
             helper.make_node("Pow", ["two", "b"], ["pb"], name="pow_b"),
             helper.make_node(combine, ["pa", "pb"], ["s"], name="combine"),
             helper.make_node("Log", ["s"], ["l"], name="log"),
             helper.make_node("Div", ["l", "ln2"], ["y"], name="div")]
    inits = [numpy_helper.from_array(np.asarray(2.0, np.float32), "two"), numpy_helper.from_array(LN2, "ln2")]
    ins = [helper.make_tensor_value_info(v, TensorProto.FLOAT, [6, 32]) for v in ("a", "b")]
    graph = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 32])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def overflow_node(model, feeds, want, atol, rtol):
    """The group as ``fx_localise`` hands it: every value its nodes produce is an output."""
    from onnx import ValueInfoProto

    model.graph.output.extend(ValueInfoProto(name=v) for n in model.graph.node for v in n.output if v != "y")
    return _overflow_node(model, feeds, want, atol, rtol)


def _feeds():
    torch.manual_seed(0)
    a, b = torch.randn(6, 32) * 300, torch.randn(6, 32)
    return a, b, {"a": a.numpy(), "b": b.numpy()}


def test_the_functions_form_that_overflows_names_the_overflowing_node():
    a, b, feeds = _feeds()
    want = {"y": torch.logaddexp2(a, b).numpy()}
    assert np.isfinite(want["y"]).all()
    assert overflow_node(_file("Add"), feeds, want, 1e-4, 1e-4) == "Pow pow_a"


def test_another_function_that_overflows_too_is_not_an_overflow():
    a, b, feeds = _feeds()
    want = {"y": torch.logaddexp2(a, b).numpy()}
    assert overflow_node(_file("Mul"), feeds, want, 1e-4, 1e-4) == ""      # a + b: wrong where finite
    small = {"a": feeds["a"] / 100, "b": feeds["b"]}                              # nothing overflows
    assert overflow_node(_file("Add"), small, {"y": torch.logaddexp2(a / 100, b).numpy()}, 1e-4, 1e-4) == ""


class Body(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logaddexp2((x * 100).long(), x)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(32, 32), Body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Model().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the explanation's re-exports
def test_the_dynamo_logaddexp2_is_told_as_stability_verified(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows, dynamo=True)
    assert res.verdict != "ok" and res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "stability", head.message
    assert "logaddexp2" in head.message and "overflows" in head.message, head.message
