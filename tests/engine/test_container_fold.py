"""A BatchNorm outside the container whose last Conv it normalises (timm's deep stem, ResNet-D: ``conv1`` a
Sequential ending in a Conv, ``bn1`` after it) is folded by TorchScript into that Conv, and the fused node keeps the
Conv's name.  The BatchNorm's input was produced, as the hooks saw it, by the Sequential (the last to hand that
tensor on), not by the Conv, so the fold was not recognised: a clean raw export of timm's resnet18d read DRIFT at
``conv1.6`` (max |d| 1.29, the Conv's torch output compared with the folded node's).  A container's output now
remembers the call inside it that made that very tensor (``TensorRef.inner``); folds look through it.  An in-place
ReLU's output is its input's tensor, made before it: never its ``inner``."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.models import off_identity


class Stem(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                   nn.Conv2d(8, 8, 3, padding=1))
        self.bn1, self.act = nn.BatchNorm2d(8), nn.ReLU(inplace=True)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(self.act(self.bn1(self.conv1(x))).mean((2, 3)))


def model() -> nn.Module:
    m = off_identity(Stem)
    with torch.no_grad():
        for bn in (m.conv1[1], m.bn1):
            bn.running_mean.normal_(0.0, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    return m


def inputs() -> torch.Tensor:
    return torch.randn(1, 3, 8, 8)


def test_a_batchnorm_after_a_container_s_last_conv_is_a_fold_not_a_drift(tmp_path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    path = tmp_path / "ts.onnx"
    torch.onnx.export(model(), (inputs(),), str(path), dynamo=False, opset_version=17, input_names=["x"])
    result = run_once(Config(model=f"{__file__}:model", inputs=f"{__file__}:inputs", onnx=str(path),
                             samples=2)).result
    assert result.verdict == "ok", result.drift_origin
    by = {L.module: L for L in result.layers}
    assert by["conv1.3"].status == "fused" and by["bn1"].status == "ok" and by["bn1"].op_types == ["Conv"]


@pytest.mark.parametrize("dynamo", [False, True])
def test_the_container_of_a_folded_conv_has_no_value_of_its_own(tmp_path, dynamo):
    """Session 37 left it: ``conv1`` (the Sequential) hands on ``conv1.3``'s output, which the file never computes
    (folded with ``bn1``).  The container read "unattributed" (TorchScript: paired with the folded node's value,
    bn1's; dynamo: with ``conv1.2``'s ReLU) or unmapped (timm's resnet18d, dynamo).  It is fused into bn1's node, as
    ``conv1.3`` is; its calls inside are still compared."""
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    path = tmp_path / "m.onnx"
    torch.onnx.export(model(), (inputs(),), str(path), dynamo=dynamo, input_names=["x"],
                      **({} if dynamo else {"opset_version": 17}))
    result = run_once(Config(model=f"{__file__}:model", inputs=f"{__file__}:inputs", onnx=str(path),
                             samples=2)).result
    by = {L.module: L for L in result.layers}
    assert result.verdict == "ok", result.drift_origin
    assert by["conv1"].status == "fused" and not by["conv1"].onnx_values, (by["conv1"].status, by["conv1"].note)
    assert "folded into bn1" in by["conv1"].note
    assert by["conv1.1"].status == "ok" and by["bn1"].status == "ok" and by["bn1"].op_types == ["Conv"]
