"""A bool value in the file is never paired with an integer torch tensor of its shape.  DeBERTa's layers take
an int64 mask and each computes ``scores.masked_fill(~mask.bool(), ...)``; the dynamo exporter computes the
``Not(Cast(mask, bool))`` once, so the second layer's nodes read that bool value where torch hands the layer the
int64 mask.  Paired by shape and "integer" dtype, the local run fed the int64 mask as that bool value and ONNX
Runtime refused the local graph: exit 3, "ONNX Runtime cannot load the graph ... Type 'tensor(int64)' of input
parameter (feed::bitwise_not) of operator (Where)", on a clean file ORT runs."""
from __future__ import annotations

import torch
from torch import nn

from drifttui.core.pipeline import run_once
from drifttui.core.result import Config

HERE = __file__


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qk = nn.Linear(16, 32)
        self.out = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k = self.qk(x).chunk(2, -1)
        scores = (q @ k.transpose(-1, -2)).masked_fill(~mask.bool(), torch.finfo(x.dtype).min)
        return x + self.out(scores.softmax(-1) @ x)


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask[:, None, :] * attention_mask[:, :, None]     # int64, as DeBERTa's get_attention_mask
        for layer in self.layers:
            x = layer(x, mask)
        return x


def masked() -> nn.Module:
    torch.manual_seed(0)
    return Masked().eval()


def inputs() -> dict:
    mask = torch.ones(1, 6, dtype=torch.int64)
    mask[0, 4:] = 0
    return {"x": torch.randn(1, 6, 16), "attention_mask": mask}


def test_a_bool_value_is_not_fed_an_int64_mask():
    r = run_once(Config(model=f"{HERE}:masked", inputs=f"{HERE}:inputs", exporter="dynamo", samples=2)).result
    assert r.verdict == "ok", r.drift_origin
    assert r.coverage.unmapped == 0
    layer1 = next(L for L in r.layers if L.module == "layers.1")
    assert layer1.status == "ok" and layer1.onnx_values
