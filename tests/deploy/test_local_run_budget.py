"""A layer's precision budget counts the nodes its local run computes (issue 33; found by
tests/deploy/unseen_matrix2.py on a timm DenseNet, dynamo, quantize_static QOperator).

In the QOperator file a MaxPool after a quantized Conv computes on the Conv's integers
(QLinearConv -> MaxPool -> DequantizeLinear for the float BatchNorm after it), and the next block's
QLinearConcat reads the MaxPool's integers too.  The pool's local run rounds the PyTorch value of its
input through the QOperator view's way back (a QuantizeLinear at the file's scale), but the mapping gives
that QuantizeLinear and the MaxPool to the deeper block's region (``plan.node_call``), so the pool's own
budget was 0: a clean file was a "genuine drift" at the pool.  Here the model is built in the test
(seeded, nothing downloaded): stem Conv + ReLU, MaxPool, a dense layer (BatchNorm, ReLU, Conv, cat).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tests.deploy.conftest import needs

HERE = Path(__file__).resolve()


class _Layer(nn.Module):
    def __init__(self, cin: int, growth: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, growth, 3, padding=1)

    def forward(self, x):
        return torch.cat([x, self.conv(torch.relu(self.norm(x)))], 1)


class PoolNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.block = nn.Sequential(_Layer(8, 4), _Layer(12, 4))
        self.head = nn.Conv2d(16, 4, 1)

    def forward(self, x):
        return self.head(self.block(self.pool(self.stem(x))))


def poolnet():
    torch.manual_seed(0)
    m = PoolNet()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for layer in m.block:
            bn = layer.norm
            bn.running_mean.copy_(torch.randn(bn.num_features, generator=g) * 0.2)
            bn.running_var.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
            bn.weight.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
            bn.bias.copy_(torch.randn(bn.num_features, generator=g) * 0.2)
    return m.eval()


def img():
    return torch.randn(1, 3, 16, 16)


def _feeds(i: int) -> dict:
    torch.manual_seed(i)
    return {"x": img().numpy()}


@pytest.fixture(scope="module")
def qoperator(tmp_path_factory):
    needs("onnxruntime.quantization")
    import onnx

    from drifttui.core.model.export import export_model
    from tests.deploy import precision_models as PM

    folder = tmp_path_factory.mktemp("poolnet")
    raw = export_model(poolnet(), (img(),), {}, "dynamo", folder)
    m = onnx.load(str(raw))
    feeds = (lambda i: {m.graph.input[0].name: _feeds(i)["x"]})
    return PM.int8_qoperator(raw, folder / "qoperator.onnx", feeds, n=4)


def _prepared(path: Path):
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    return prepare(Config(model=f"{HERE}:poolnet", inputs=f"{HERE}:img", onnx=str(path), samples=2))


def test_the_pool_on_integers_is_budgeted_with_the_nodes_its_local_run_computes(qoperator):
    from drifttui.core.prepare.local_runs import run_nodes

    pr = _prepared(qoperator)
    ix, plan, calls = pr.index, pr.plan, pr.calls
    pool = next(c.index for c in calls if c.module == "pool")
    maxpool = next(n.index for n in ix.nodes if n.op_type == "MaxPool")
    assert ix.elem_types.get(ix.nodes[maxpool].inputs[0]) in (2, 3), "the file's MaxPool reads integers"
    assert plan.node_call[maxpool] != pool, "the mapping gives the MaxPool to another call's region (the case)"
    run = run_nodes(ix, plan)[pool]
    assert maxpool in run
    reduced = [k for k in run if k in pr.precision.nodes]
    assert reduced, "the pool's local run rounds its input at the file's scale"
    budget = pr.budgets[0][pool]
    assert set(reduced) == set(budget.run_ids) and budget.own > 0 and budget.fmt == "int8"
    # what keeping the pool in float32 keeps, and which call's weights a node reads, stay the region's
    assert not set(reduced) & set(budget.node_ids)


def test_a_clean_qoperator_pool_after_a_quantized_conv_is_no_drift(qoperator):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    r = run_once(Config(model=f"{HERE}:poolnet", inputs=f"{HERE}:img", onnx=str(qoperator), samples=2)).result
    p = r.precision
    assert r.verdict == "ok" or (p.verdict == "over budget" and p.cause == "precision"), (r.verdict, p.cause,
                                                                                          r.drift_origin)
