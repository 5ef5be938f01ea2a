"""A call the processed file computes as an identity owns no node of its input's producers.  timm's head pools a
1x1 map (``AdaptiveAvgPool2d`` on a 32x32 ResNet): onnxsim removes the dynamo export's ReduceMean, and the pool's
output is its input's value.  Its region (prepare/plan/transfer.py) walked back from that value through the block
before it: the pool's row read "Add, Relu", the residual sum and activation of the previous block (session 36's
new-user review).  The walk now stops at the values the call reads: no node of its own."""
from __future__ import annotations

import torch
from torch import nn

from tests.deploy.conftest import needs
from tests.models import off_identity


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.act, self.pool, self.fc = nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Linear(8, 4)

    def forward(self, x):
        y = self.bn(self.conv(x))
        y = self.act(y + self.conv2(y))
        return self.fc(self.pool(y).flatten(1))


def model() -> nn.Module:
    return off_identity(Net)


def inputs() -> torch.Tensor:
    return torch.randn(1, 3, 2, 2)      # the pool reads a 1x1 map: an identity


def test_a_pool_onnxsim_removed_owns_no_node_of_the_block_before_it(tmp_path):
    needs("onnxsim")
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.deploy import processed as P

    raw = tmp_path / "raw.onnx"
    torch.onnx.export(model(), (inputs(),), str(raw), dynamo=True, input_names=["x"])
    sim = P.onnxsim(raw, tmp_path / "sim.onnx")
    import onnx

    assert not any(n.op_type in ("ReduceMean", "GlobalAveragePool") for n in onnx.load(str(sim)).graph.node), \
        "the case's premise: onnxsim removed the pool"
    result = run_once(Config(model=f"{__file__}:model", inputs=f"{__file__}:inputs", onnx=str(sim),
                             samples=1)).result
    by = {L.module: L for L in result.layers}
    assert "Relu" in by["act"].op_types
    pool = by["pool"]
    assert not {"Add", "Relu", "Conv"} & set(pool.op_types), pool.op_types
    assert pool.onnx_nodes == [] and pool.status != "drift"
    assert result.verdict == "ok"


def test_an_exact_tie_goes_to_the_value_the_reference_s_op_kind_computes(tmp_path):
    """TorchScript writes the pool as GlobalAveragePool, which onnxsim keeps: over a 1x1 map its output holds exactly
    the ReLU's numbers.  Both tied exactly for the pool and the first candidate won, so the pool was mapped to the
    ReLU's value and the Linear's row carried GlobalAveragePool and Flatten.  Among exact ties the value computed by
    the reference value's kind of op is now taken (prepare/plan/nearest.py), as among near ties."""
    needs("onnxsim")
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.deploy import processed as P

    raw = tmp_path / "raw.onnx"
    torch.onnx.export(model(), (inputs(),), str(raw), dynamo=False, input_names=["x"], opset_version=17)
    sim = P.onnxsim(raw, tmp_path / "sim.onnx")
    import onnx

    assert any(n.op_type == "GlobalAveragePool" for n in onnx.load(str(sim)).graph.node), "the case's premise"
    result = run_once(Config(model=f"{__file__}:model", inputs=f"{__file__}:inputs", onnx=str(sim),
                             samples=1)).result
    by = {L.module: L for L in result.layers}
    assert by["pool"].op_types == ["GlobalAveragePool"], by["pool"].op_types
    assert "GlobalAveragePool" not in by["fc"].op_types, by["fc"].op_types
    assert result.verdict == "ok"
