"""A file whose value sizes are known only by data propagation.  The ONNX Optimizer drops the exporter's
value_info and merges consecutive Reshapes: timm LeViT's ``LinearNorm`` (Linear, BatchNorm1d on the flattened
tokens, ``reshape_as`` back) then hands the attention its flattened BatchNorm output straight into the
attention's head split.  The shape of every value after a Reshape whose shape the graph computes
(``Shape -> Slice -> Concat``) was unknown to plain shape inference, so the absorbed-view rule could not see
that the flattened value holds the module's output: 13 of LeViT-128S's calls were ``unmapped``."""
from __future__ import annotations

import torch
from torch import nn

from tests.deploy import processed as P
from tests.deploy.conftest import needs

HERE = __file__


class LinearNorm(nn.Module):
    def __init__(self, i: int, o: int) -> None:
        super().__init__()
        self.linear = nn.Linear(i, o, bias=False)
        self.bn = nn.BatchNorm1d(o)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = LinearNorm(16, 48)
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 2, -1).split([8, 8, 8], dim=3)
        a = (q.transpose(1, 2) @ k.permute(0, 2, 3, 1)).softmax(-1) @ v.transpose(1, 2)
        return x + self.proj(a.transpose(1, 2).reshape(b, n, 16))


class Tokens(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.blocks = nn.Sequential(Heads(), Heads())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # LeViT's stem: the Conv's output flattened to tokens, a Reshape to a shape the graph computes from the
        # Conv's output (which the optimizer cannot fold without the Conv's value_info)
        return self.blocks(self.stem(x).flatten(2).transpose(1, 2))


def tokens_model() -> nn.Module:
    torch.manual_seed(0)
    m = Tokens()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm1d):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.6, 1.4)
    return m.eval()


def test_the_optimizers_merged_reshape_leaves_no_call_unmapped(tmp_path):
    needs("onnxoptimizer")
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    spec = f"{HERE}:tokens_model"
    raw = _export(spec, tmp_path)
    opt = P.onnxoptimizer(raw, tmp_path / "opt.onnx")
    r = run_once(Config(model=spec, inputs="shape:1x3x4x6", onnx=str(opt), samples=2)).result
    assert r.verdict == "ok", r.drift_origin
    assert r.coverage.unmapped == 0, [(L.module, L.note) for L in r.layers if L.status == "unmapped"]
    qkv = next(L for L in r.layers if L.module == "blocks.1.qkv")
    assert qkv.status == "ok" and qkv.metrics is not None


def _export(spec: str, folder):
    from drifttui.core.model.export import export_model
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.spec import parse_model_spec

    torch.manual_seed(0)
    model = load_torch_model(parse_model_spec(spec))
    return export_model(model, (torch.randn(1, 3, 4, 6),), {}, "torchscript", folder)
