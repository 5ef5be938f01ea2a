"""A model whose drift is in the ROOT module's own ops (issue 35, point 6: a root origin in the
TUI): a per-channel scale between its two children, one channel of it changed in the ONNX file.
``scripts/record_fixtures.py`` records the real engine's result on it (the
``root-drift`` fixture).  Run by the recording script only; no test imports torch through it."""
from __future__ import annotations

from pathlib import Path

import torch

INPUT = "shape:1x3x16x16"
CHANNEL, WRONG = 2, 0.6         # the scale's channel 2 is 0.5 in torch, 0.6 in the ONNX file


class RootDrift(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)
        self.register_buffer("scale", torch.full((1, 8, 1, 1), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x) * self.scale          # the root's own op
        return self.head(y.mean((2, 3)))


def build() -> torch.nn.Module:
    return RootDrift().eval()


def export_root_drift(folder: Path) -> Path:
    """The dynamo export with the scale's channel CHANNEL changed (the root's own Mul drifts)."""
    import onnx
    from onnx import numpy_helper

    path = Path(folder) / "root_drift.onnx"
    torch.onnx.export(build(), (torch.randn(1, 3, 16, 16),), str(path), dynamo=True, verbose=False)
    proto = onnx.load(str(path))
    init = next(i for i in proto.graph.initializer if i.name == "scale")
    values = numpy_helper.to_array(init).copy()
    values[0, CHANNEL] = WRONG
    init.CopyFrom(numpy_helper.from_array(values, "scale"))
    onnx.save(proto, str(path))
    return path
