"""A call inside a ``torch.autocast`` region of a dynamo file says why it has no ONNX node (``plan/autocast.py``).

The dynamo exporter lowers the region under the scope of the module that opened it and casts the Linear's weight
at export time: the Linear has no node and no parameter in the graph.  It was said as "the exporter removed it (its
output does not reach the model outputs, or it was constant-folded)", which it did not: it is computed, and
compared, as part of the module around it.  The verdict stays within the float16 budget.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

SPEC = Path(__file__).resolve()


class Body(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin, self.out = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16):
            y = self.lin(x)
        return self.out(y.float())


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(16, 16), Body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def model() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


def test_a_call_inside_an_autocast_region_is_said_to_be_computed_as_part_of_its_caller():
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    result = Pipeline().run(Config(model=f"{SPEC}:model", exporter="dynamo", inputs="shape:4x16", samples=2)).result
    lin = next(layer for layer in result.layers if layer.module == "body.lin")
    assert "torch.autocast region (float16)" in lin.note and "part of body" in lin.note, lin.note
    assert "removed it" not in lin.note
    assert result.verdict == "ok"
