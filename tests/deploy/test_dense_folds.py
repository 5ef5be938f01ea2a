"""A BatchNorm called right after a Conv is not always its fold (found by tests/deploy/unseen_matrix2.py on a
timm DenseNet, TorchScript, before any engine change): every float16 and int8 file of it ended in "internal
failure: RuntimeError: The size of tensor a (8) must match the size of tensor b (32)".  The block's last
Conv (growth-rate channels) is the last call before the final BatchNorm (``features.norm5``), which reads
the block's concatenation of every feature map so far; the weight check folded the two by call order
alone.  A fold is a BatchNorm that reads exactly that Conv's output, with as many channels
(folding.conv_bn_folds).

The model is a two-layer dense block between a post-norm stem (a real fold) and a final BatchNorm; a drift
planted at that BatchNorm is explained and repaired (the causes' candidate weights fold by the same rule)."""
from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import torch
from torch import nn

from tests.deploy.conftest import needs

HERE = Path(__file__).resolve()


class _Layer(nn.Module):
    def __init__(self, cin: int, growth: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, growth, 3, padding=1, bias=False)

    def forward(self, x):
        return torch.cat([x, self.conv(torch.relu(self.norm(x)))], 1)


class Dense(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(8)
        self.l1, self.l2 = _Layer(8, 4), _Layer(12, 4)
        self.norm = nn.BatchNorm2d(16)
        self.head = nn.Conv2d(16, 4, 1)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.l2(self.l1(torch.relu(self.stem_bn(self.stem(x))))))))


def dense():
    torch.manual_seed(0)
    m = Dense()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for bn in (m.stem_bn, m.l1.norm, m.l2.norm, m.norm):
            bn.running_mean.copy_(torch.randn(bn.num_features, generator=g) * 0.2)
            bn.running_var.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
            bn.weight.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
            bn.bias.copy_(torch.randn(bn.num_features, generator=g) * 0.2)
    return m.eval()


def img():
    return torch.randn(1, 3, 16, 16)


def _check(path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=f"{HERE}:dense", inputs=f"{HERE}:img", onnx=str(path), samples=2)).result


@pytest.mark.parametrize("exporter", ["torchscript"])
def test_a_batchnorm_of_a_concatenation_is_not_folded_into_the_conv_before(tmp_path, exporter):
    needs("onnxruntime.transformers.float16")
    from onnxruntime.transformers.float16 import convert_float_to_float16

    from drifttui.core.model.export import export_model

    raw = export_model(dense(), (img(),), {}, exporter, tmp_path)
    fp16 = tmp_path / "fp16.onnx"
    onnx.save(convert_float_to_float16(onnx.load(str(raw)), keep_io_types=True), str(fp16))
    clean = _check(fp16)
    assert clean.verdict == "ok", (clean.verdict, clean.drift_origin)
    # the weight check still reads the real fold (the stem's Conv through its BatchNorm) and the unfolded
    # Conv of a dense layer: a float16 weight x1.05 there is named at its module
    from tests.deploy import qkv_models as Q

    w = dense().l1.conv.weight.detach().numpy()
    bad = _check(Q.plant_weight(fp16, tmp_path / "bad.onnx", w, "float16", 1.05))
    assert bad.verdict == "drift" and bad.drift_origin.module == "l1.conv", bad.drift_origin


def test_conv_bn_folds_follows_the_data_not_the_call_order():
    from drifttui.core.prepare.plan.folding import conv_bn_folds
    from drifttui.core.runtime.torch_hooks import Call, TensorRef

    m = dense()
    ref = lambda producer: TensorRef((1, 1), "float32", producer=producer)  # noqa: E731
    calls = [Call(0, "stem", "Conv2d", 0, 1, None, [ref(None)]),
             Call(1, "stem_bn", "BatchNorm2d", 0, 1, None, [ref((0, 0))]),
             Call(2, "l1.conv", "Conv2d", 0, 1, None, [ref(None)]),
             Call(3, "l2.norm", "BatchNorm2d", 0, 1, None, [ref(None)]),      # reads the concatenation
             Call(4, "l2.conv", "Conv2d", 0, 1, None, [ref(None)]),
             Call(5, "norm", "BatchNorm2d", 0, 0, None, [ref((9, 0))]),       # reads the block's output
             Call(6, "stem", "Conv2d", 1, 1, None, [ref(None)]),
             Call(7, "stem_bn", "BatchNorm2d", 1, 1, None, [ref((2, 0))])]    # same channels, another Conv's
    assert [(a.module, b.module) for a, b, _, _ in conv_bn_folds(m, calls)] == [("stem", "stem_bn")]


@pytest.mark.deploy
def test_a_drift_at_the_final_batchnorm_is_explained_without_a_crash(tmp_path):
    from drifttui.core.model.export import export_model
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.deploy import attr_plant as A

    raw = export_model(dense(), (img(),), {}, "torchscript", tmp_path)
    bad = A.epsilon(raw, dense().norm.weight.detach().numpy(), 0.5, tmp_path / "eps.onnx")
    p = Pipeline()
    r = p.run(Config(model=f"{HERE}:dense", inputs=f"{HERE}:img", onnx=str(bad), samples=2)).result
    assert r.drift_origin is not None and r.drift_origin.module == "norm", r.drift_origin
    assert p.repair(r).after.verdict == "ok"
