"""Small seeded models for test_unbuilt_files.py (drifttui model spec targets: ``unbuilt_models.py:NAME``)."""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn as nn

HERE = Path(__file__).resolve()


class GeluCNN(nn.Module):
    """A Conv, a GELU and a 1x1 Conv: at ORT ENABLE_ALL the GELU stays a default-domain op between two
    NCHWc Convs, its value stored blocked (ConvNeXt's MLP in small).  16 channels: a multiple of the
    block on AVX2 (8) and AVX-512 (16), so the blocked value has torch's shape."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.act = nn.GELU()
        self.pw = nn.Conv2d(16, 16, 1)
        self.act2 = nn.GELU()
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, x):
        return self.head(self.act2(self.pw(self.act(self.conv(x)))))


def gelu_cnn() -> nn.Module:
    torch.manual_seed(0)
    return GeluCNN().eval()


class LayerScaleCNN(nn.Module):
    """ConvNeXt's block in small: a Conv, a GELU, a 1x1 Conv whose output a layer scale ``gamma``
    multiplies, and the residual.  onnxsim folds GELU's final ``* 0.5`` (TorchScript's decomposed
    GELU) and ``gamma`` into the 1x1 Conv's weight: neither the GELU's value nor the Conv's is in
    the simplified file, only the block's."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.act = nn.GELU()
        self.pw = nn.Conv2d(16, 16, 1)
        self.gamma = nn.Parameter(torch.rand(16) * 0.8 + 0.2)
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, x):
        y = self.conv(x)
        y = y + self.pw(self.act(y)) * self.gamma.reshape(1, -1, 1, 1)
        return self.head(y)


def layer_scale_cnn() -> nn.Module:
    torch.manual_seed(0)
    return LayerScaleCNN().eval()


def layer_scale_cnn_signed() -> nn.Module:
    """The same block with a layer scale of both signs (trained ConvNeXts have negative ones, and the
    matrix's randomised ``gamma`` does): the reader's weight rows change sign too."""
    model = layer_scale_cnn()
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        model.gamma.mul_(torch.where(torch.rand(16, generator=g) < 0.5, -1.0, 1.0))
    return model


class LibGELU(nn.Module):
    """Another library's GELU (timm's): ``F.gelu`` in its code, no ``approximate`` attribute to read."""

    def forward(self, x):
        return torch.nn.functional.gelu(x)


def lib_gelu_cnn() -> nn.Module:
    model = gelu_cnn()
    model.act, model.act2 = LibGELU(), LibGELU()
    return model


class HardSwishCNN(nn.Module):
    """MobileNetV3's Conv + Hardswish in small: ORT ENABLE_BASIC inlines the HardSwish function into a
    HardSigmoid and a Mul whose nodes have no name (so no TorchScript scope)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.act = nn.Hardswish()
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.act2 = nn.Hardswish()
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, x):
        return self.head(self.act2(self.conv2(self.act(self.conv(x)))))


def hardswish_cnn() -> nn.Module:
    torch.manual_seed(0)
    return HardSwishCNN().eval()


class PaddedCNN(nn.Module):
    """A Conv padded by F.pad (right and bottom, as timm's Conv2dSame pads a stride-2 Conv) with padding 0
    of its own: a simplifier folds the Pad into the Conv's pads."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=0)
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.head(torch.relu(self.conv(torch.nn.functional.pad(x, (0, 1, 0, 1)))))


def padded_cnn() -> nn.Module:
    torch.manual_seed(0)
    return PaddedCNN().eval()


def spec(name: str) -> str:
    return f"{HERE}:{name}"


def export(name: str, exporter: str, folder: Path) -> Path:
    import onnx

    from drifttui.core.model.export import export_model

    path = export_model(globals()[name](), (torch.randn(1, 3, 16, 16),), {}, exporter, folder, name=f"{name}.onnx")
    out = folder / f"{name}-{exporter}-embedded.onnx"
    onnx.save(onnx.load(str(path)), str(out))
    return out
