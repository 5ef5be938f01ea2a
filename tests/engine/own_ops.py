"""Tiny models whose drift origin owns ONNX nodes beside its children's (issue 23 item 13):
``build_up``: a decoder block ``up`` that resizes, concatenates and applies a ReLU itself around a
child Conv; ``build_root``: a model whose own forward resizes between two child Convs (the
origin is the root); ``build_root_scale``: the root multiplies by a constant (``scale_constant``
edits it in the file: a drift of the root that zero inputs reproduce).  ``asymmetric(path)`` edits every Resize of an exported file into the
coordinate mode PyTorch's align_corners=False does not mean."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from drifttui.core.model.examples.models import _init


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


class RootScale(nn.Module):
    """The root scales its child's output itself: a constant the ONNX file can hold wrong."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stem(x) * 1.5)


def build_up() -> nn.Module:
    return _init(Decoder(), seed=4)


def build_root() -> nn.Module:
    return _init(RootResize(), seed=6)


def build_root_scale() -> nn.Module:
    return _init(RootScale(), seed=8)


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


def scale_constant(path: str, value: float = 1.6) -> None:
    """The root's Mul constant (1.5 in torch) set to ``value`` in the file."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(path)
    mul = next(n for n in proto.graph.node if n.op_type == "Mul")
    consts = {t.name: t for t in proto.graph.initializer}
    for v in mul.input:
        if v in consts:
            consts[v].CopyFrom(numpy_helper.from_array(np.full_like(numpy_helper.to_array(consts[v]), value), v))
            break
    else:
        node = next(n for n in proto.graph.node if n.op_type == "Constant" and set(n.output) & set(mul.input))
        tensor = numpy_helper.to_array(node.attribute[0].t)
        node.attribute[0].t.CopyFrom(numpy_helper.from_array(np.full_like(tensor, value)))
    onnx.save(proto, path)
