"""Tiny models whose drift origin owns ONNX nodes beside its children's (issue 23 item 13):
``build_up``: a decoder block ``up`` that resizes, concatenates and applies a ReLU itself around a
child Conv; ``build_root``: a model whose own forward resizes between two child Convs (the
origin is the root).  ``asymmetric(path)`` edits every Resize of an exported file into the
coordinate mode PyTorch's align_corners=False does not mean."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from drifttui.examples.models import _init


class Up(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        y = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        return torch.relu(torch.cat([self.conv(y), skip], dim=1))


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Conv2d(3, 4, 3, padding=1)
        self.down = nn.MaxPool2d(2)
        self.up = Up(4)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.enc(x)
        return self.head(self.up(self.down(e), e))


class RootResize(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.interpolate(self.stem(x), scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.head(y)


def build_up() -> nn.Module:
    return _init(Decoder(), seed=4)


def build_root() -> nn.Module:
    return _init(RootResize(), seed=6)


def inputs() -> torch.Tensor:
    return torch.randn(1, 3, 16, 16)


def asymmetric(path: str) -> None:
    import onnx

    proto = onnx.load(path)
    for node in proto.graph.node:
        if node.op_type == "Resize":
            for a in node.attribute:
                if a.name == "coordinate_transformation_mode":
                    a.s = b"asymmetric"
                    break
            else:
                node.attribute.append(onnx.helper.make_attribute("coordinate_transformation_mode", "asymmetric"))
    onnx.save(proto, path)
