"""A file with both kinds of quantizer: the model's own fake quantisation of its input (QAT, core/prepare/qat.py) and
the Linears a deploy tool quantised (``quantize_dynamic``).  The model's own quantizers lose nothing relative to
PyTorch and have no budget; the tool's keep theirs, as in a file of a float model.

Measured (session 31, this CPU): before qat.py the root call (holding the input's QuantizeLinear) had an int8 budget
of 2.2e-2 (the bound) and "5 of 17 nodes" were reduced; after, 4 of 17, the root has none, and fc1 / fc2 keep their
measured budgets (1.9e-2 / 1.5e-2), WITHIN BUDGET either way.  (The outputs' budget now sums the tool's nodes only.)  On a CPU without VNNI the tool's
u8s8 products saturate: the file is over budget there, and the cause is the saturation of the tool's nodes.)"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.deploy.conftest import needs

SPEC = __file__


class InputQat(nn.Module):
    """QAT on the input only (the model's own quantizer), then float Linears a deploy tool quantises."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 32)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.fake_quantize_per_tensor_affine(x, 0.05, 0, -128, 127)
        return self.fc2(self.act(self.fc1(x)))


def input_qat() -> nn.Module:
    torch.manual_seed(0)
    return InputQat().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import warnings

    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    quantization = needs("onnxruntime.quantization")
    d = tmp_path_factory.mktemp("qat_mixed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(input_qat(), (rows(),), str(d / "raw.onnx"), dynamo=False)
        quantization.quantize_dynamic(str(d / "raw.onnx"), str(d / "int8.onnx"))
    return run_once(Config(model=f"{SPEC}:input_qat", inputs=f"{SPEC}:rows", onnx=str(d / "int8.onnx"), samples=3))


def test_the_models_own_quantizer_has_no_budget_and_the_tools_keep_theirs(run):
    r, pscan = run.result, run.prepared.precision
    index = run.prepared.index
    assert sorted(index.nodes[k].op_type for k in pscan.own) == ["DequantizeLinear", "QuantizeLinear"]
    assert not set(pscan.own) & set(pscan.nodes)
    assert "2 QuantizeLinear / DequantizeLinear nodes are the model's own fake quantisation" in r.precision.summary, r.precision.summary
    budgets = {L.module: L.budget for L in r.layers}
    # the root holds the input's quantizer, the model's own: no reduced node and no own budget (its output's budget is
    # that of the tool's nodes before it); before qat.py its own budget was the quantizer's int8 bound, 2.2e-2
    assert budgets[""].format == "float32" and budgets[""].own_budget == 0.0
    for name in ("fc1", "fc2"):      # quantize_dynamic's Linears: int8 budgets, as in a float model's file
        assert budgets[name] is not None and budgets[name].format == "int8" and budgets[name].own_budget > 1e-3
    from drifttui.core.runtime.cpu import detect

    if detect().saturates is not False and r.verdict != "ok":
        # x86 without VNNI (docs/deploy.md, "int8 and the processor"): the tool's u8s8 products saturate, the file is
        # over budget, and the cause is the tool's MatMulIntegers, never the model's own quantizer (measured on an
        # AVX2 EPYC: 143 of 576 int32 outputs of fc1's MatMulInteger differ from the exact product)
        from drifttui.core.pipeline import Pipeline

        engine = Pipeline()
        head = engine.explain(engine.run(run.prepared.config).result).result.findings[0]
        saturating = {row["node"] for row in head.evidence["saturating nodes"]}
        assert head.kind == "saturation" and head.verified, (head.kind, head.message)
        assert saturating and {n.op_type for n in index.nodes if n.name in saturating} == {"MatMulInteger"}, saturating
        assert r.precision.verdict == "over budget"
        return
    assert r.precision.verdict == "within budget" and r.verdict == "ok"
