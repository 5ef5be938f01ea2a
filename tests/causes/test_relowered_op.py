"""A re-trace re-lowers the op the localisation names wrong through torch's own decomposition of it
(``retrace.relowerable``, ``variants._relowering``), where torch's core ATen table and drifttui's definitions leave it
whole.

The fuzzer's source-derived pool, seed 27068 (dynamo): ``aten.elu.default(x, 3, 1, -1.0)``, an ``input_scale`` of -1.
torchlib lowers it as ``Elu(input_scale * x)``, which scales the positive side too; torch computes
``where(x > 0, x * scale, expm1(x * input_scale) * alpha * scale)``.  ``elu`` is a core ATen op: torch's core table
leaves it whole, the TorchScript exporter's symbolic has no ``input_scale`` either, so nothing verified.  Its
decomposition in ``torch._decomp.decomposition_table`` is that ``where``.  A decomposition that reaches prims (torch's
reference ``add``), which no exporter lowers, is left out.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from drifttui.core.model.retrace import relowerable, retrace, torch_decomposition

aten = torch.ops.aten


class Scaled(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return aten.elu.default(x, 3, 1, -1.0)


class Added(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return aten.elu.default(x, 3, 1, -1.0) + x


def _ops(gm) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_the_named_op_is_re_lowered_by_torchs_decomposition_and_one_reaching_prims_is_not():
    x = torch.randn(6, 32)
    assert torch_decomposition("aten.elu.default") is aten.elu.default
    assert torch_decomposition("aten.logcumsumexp.default") is None          # drifttui's own definition
    assert "aten.elu.default" in _ops(retrace(Added(), (x,)))                # the core table leaves it whole
    gm = retrace(Added(), (x,), ("aten.elu.default", "aten.add.Tensor"))
    assert "aten.elu.default" not in _ops(gm) and "aten.expm1.default" in _ops(gm)
    assert not any(o.startswith("prims.") for o in _ops(gm))                 # add's reference decomposition left out
    assert torch.allclose(gm(x), Added()(x), atol=1e-6)
    assert relowerable(Added(), (x,), ("aten.elu.default", "aten.add.Tensor")) == ("aten.elu.default",)


class Model(nn.Module):
    def __init__(self, body: type = Scaled) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(32, 32), body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Model().eval()


def added() -> nn.Module:
    torch.manual_seed(0)
    return Model(Added).eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the explanation's re-exports
def test_a_dynamo_elu_with_an_input_scale_is_verified_and_repaired(tmp_path):
    from drifttui.cli import main
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows, dynamo=True)
    assert res.verdict != "ok" and res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "lowering" and head.patch.get("relower") == ["aten.elu.default"], \
        head.message
    assert "aten.elu.default" in head.message and "torch's own decomposition" in head.fix, head.fix
    spec = [f"{__file__}:model", "--inputs", f"{__file__}:rows", "--samples", "2"]
    fixed = tmp_path / "fixed.onnx"
    assert main(["repair", *spec, "--onnx", str(tmp_path / "test_relowered_op.onnx"), "--out", str(fixed)]) == 0
    assert main(["check", *spec, "--onnx", str(fixed)]) == 0


def test_an_fx_node_whose_result_no_value_is_named_after_is_compared_by_its_escaping_value():
    """torchlib's ``elu`` with ``scale=1`` ends on its ``Elu`` node, whose output keeps its own name (``val_6``): the
    ``elu`` group had no value to compare, and the ``add`` reading ``val_6`` was fed ONNX Runtime's wrong value and
    named wrong in its place (``fx_outputs.escaping_values``)."""
    from types import SimpleNamespace

    import numpy as np
    from onnx import TensorProto, helper

    from drifttui.core.explain.causes.locate.fx_outputs import escaping_values

    nodes = [helper.make_node("Mul", ["x", "k"], ["val_5"], name="node_Mul_5"),
             helper.make_node("Elu", ["val_5"], ["val_6"], name="node_Elu_6"),
             helper.make_node("Add", ["val_6", "x"], ["add"], name="node_add")]
    vi = [helper.make_tensor_value_info(v, TensorProto.FLOAT, [2]) for v in ("x", "k")]
    g = helper.make_graph(nodes, "g", vi, [helper.make_tensor_value_info("add", TensorProto.FLOAT, [2])])
    model = helper.make_model(g)
    groups = [SimpleNamespace(name="elu", nodes=["node_Mul_5", "node_Elu_6"]), SimpleNamespace(name="add",
                                                                                               nodes=["node_add"])]
    tv = {"elu": np.ones(2, np.float32), "add": np.zeros(2, np.float32)}
    got = escaping_values(model, groups, tv)
    assert set(got) == {"elu", "add", "val_6"} and np.array_equal(got["val_6"], tv["elu"])     # not val_5


@pytest.mark.drifts        # the explanation's re-exports
def test_the_elu_before_an_add_is_named_not_the_add_it_feeds(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, added, rows, dynamo=True)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.patch.get("relower") == ["aten.elu.default"], head.message
    assert "FX node elu" in head.message and "FX node add" not in head.message, head.message
