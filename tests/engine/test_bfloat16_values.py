"""A module whose output is bfloat16: ONNX Runtime cannot hand a bfloat16 value to numpy, and before, fetching it
as a layer's value failed the whole run (exit 3, "No corresponding Numpy type for Tensor Type. bfloat16").  It is
read through an exact Cast to float32 and compared like any float value."""
import warnings

import pytest
import torch
from torch import nn


class _ToBfloat(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 3.0).bfloat16()


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.narrow = _ToBfloat()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.narrow(self.fc(x)).float() + 1.0


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_bfloat16_module_output_is_compared_not_a_crash(tmp_path, exporter):
    import drifttui

    torch.manual_seed(0)
    model, x = _Net().eval(), torch.randn(4, 8)
    path = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=exporter == "dynamo")
    r = drifttui.check(model, str(path), inputs=x, samples=2)
    by = {L.module: L for L in r.layers}
    assert r.verdict == "ok", (r.verdict, r.drift_origin)
    assert by["narrow"].status == "ok" and by["narrow"].metrics is not None
