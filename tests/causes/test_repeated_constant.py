"""A remainder whose dividend is a number the TorchScript exporter writes twice (``onnx/edit/lowerings/remainder.py``).

The fuzzer's source-derived pool, seed 32010 (fuzzI): ``aten.remainder.Scalar_Tensor(-10000.0, x)``.  Both exporters
lower it as ``a - Floor(a / b) * b``, rounded at ``a``'s magnitude where torch's ``fmod`` is exact (``stability``,
``rewrite: fmod_remainder``).  The dynamo exporter feeds the Div and the Sub one initializer; the TorchScript exporter
writes a Constant node per use, so the Div read ``/body/Constant_2`` and the Sub ``/body/Constant_3``, both -10000.
The pattern asked for one name, missed it, and the finding fell to the origin computed in float64 (``runtime``,
"ill-conditioned"), not naming the formula.  Two constants equal in dtype, shape and value are one operand now.

Neither repaired file passes ``check``: with the Sub rewritten the body's own error is 0, but ``remainder(a, b)``
moves by ``a / b`` per unit of ``b`` (here up to 1e5), so the stem's last-bit rounding in ONNX Runtime is amplified
past the tolerance at the output, no module owning it (``unattributed``): no file computes torch's float32 stem.
The end-to-end form here feeds the body the model's input (times 0.25, exact on both sides): it is repaired.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn


def _graph(same_name: bool, second: float = -10000.0):
    from onnx import TensorProto, helper

    def const(name: str, v: float):
        return helper.make_node("Constant", [], [name], name=name,
                                value=helper.make_tensor(name, TensorProto.FLOAT, [], [v]))

    a2 = "a1" if same_name else "a2"
    nodes = [const("a1", -10000.0), *([] if same_name else [const("a2", second)]),
             helper.make_node("Div", ["a1", "b"], ["q"], name="/body/Div"),
             helper.make_node("Floor", ["q"], ["f"], name="/body/Floor"),
             helper.make_node("Mul", ["f", "b"], ["m"], name="/body/Mul"),
             helper.make_node("Sub", [a2, "m"], ["r"], name="/body/Sub")]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("b", TensorProto.FLOAT, [None])], [vi("r", TensorProto.FLOAT, [None])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, b):
    import onnxruntime as ort

    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(["r"], {"b": b})[0]


@pytest.mark.parametrize("same_name", [True, False], ids=["one-constant", "two-constants"])
def test_a_dividend_written_as_two_equal_constants_is_one_remainder(same_name):
    import onnx

    from drifttui.core.onnx.edit.lowerings.remainder import apply_fmod_remainder, remainder_of

    model = _graph(same_name)
    sub = next(n for n in model.graph.node if n.name == "/body/Sub")
    assert remainder_of(model, sub) == ("a1", "b")
    torch.manual_seed(0)
    b = torch.randn(4096) * 0.3
    want = torch.remainder(torch.tensor(-10000.0), b).numpy()
    assert np.abs(_run(model, b.numpy()) - want).max() > 1e-3       # the formula, rounded at 1e4
    apply_fmod_remainder(model, {"node": "/body/Sub"})
    onnx.checker.check_model(model)
    assert np.array_equal(_run(model, b.numpy()), want)


def test_two_constants_of_different_values_are_no_remainder():
    from drifttui.core.onnx.edit.lowerings.remainder import remainder_of

    model = _graph(False, second=-9999.0)
    sub = next(n for n in model.graph.node if n.name == "/body/Sub")
    assert remainder_of(model, sub) is None


class Body(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.remainder(-10000.0, x)


class Model(nn.Module):
    """No Linear before the body (the fuzz program has 16): its input is then the same on both sides, and the
    repaired file computes torch's output to the bit."""

    def __init__(self) -> None:
        super().__init__()
        self.body = Body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x * 0.25)


def model() -> nn.Module:
    torch.manual_seed(32010)
    return Model().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the explanation's re-exports
def test_torchscripts_scalar_remainder_is_the_unstable_formula_verified(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows, dynamo=False, samples=3)
    assert res.verdict != "ok" and res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "stability" and head.kind == "export", head.message
    assert "remainder" in head.message and "Floor(a / b)" in head.message, head.message


@pytest.mark.drifts
def test_the_repaired_torchscript_remainder_passes_check(tmp_path):
    from drifttui.cli import main

    path, fixed = tmp_path / "m.onnx", tmp_path / "fixed.onnx"
    torch.onnx.export(model(), (rows(),), str(path), dynamo=False)
    common = [f"{__file__}:model", "--inputs", f"{__file__}:rows", "--seed", "7", "--samples", "3"]
    assert main(["repair", *common, "--onnx", str(path), "--out", str(fixed)]) == 0
    assert main(["check", *common[:-1], "5", "--onnx", str(fixed)]) == 0
