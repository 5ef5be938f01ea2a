"""What the built-in examples are, as plain data: name, description, the origin a drifted one
should produce and its drift class (docs/drift-catalogue.md).  No torch: ``drifttui examples``
prints this table in a fraction of a second; ``drifttui.core.model.examples.builtin`` attaches the models.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ExampleInfo:
    name: str
    description: str
    expected_origin: Optional[str] = None     # module qualified name, None for clean examples
    cause: str = ""                           # drift class (docs/drift-catalogue.md)


CATALOGUE: dict[str, ExampleInfo] = {e.name: e for e in [
    ExampleInfo("resnet18", "ResNet-18-style CNN (width 16, 3x64x64), clean export"),
    ExampleInfo("resnet18-bf16", "ResNet-18-style CNN whose layer3.1.conv1 weights were stored at bfloat16 "
                "precision in the ONNX file (a constant folded to the wrong dtype)",
                expected_origin="layer3.1.bn1", cause="dtype"),
    ExampleInfo("transformer", "4-layer transformer encoder (d=64, 4 heads, 16 tokens), clean export"),
    ExampleInfo("transformer-ln-eps", "transformer encoder whose layers.1.norm2 LayerNormalization epsilon "
                "is 1e-2 in the ONNX graph instead of 1e-5", expected_origin="layers.1.norm2", cause="normalization"),
    ExampleInfo("transformer-layerscale", "transformer encoder with LayerScale, clean export"),
    ExampleInfo("transformer-lost-gamma", "transformer encoder whose LayerScale gamma is a plain tensor "
                "attribute: the ONNX file holds the trained values, the reloaded PyTorch model the defaults",
                expected_origin="layers.0.ls1", cause="custom-module"),
    ExampleInfo("unet", "tiny encoder-decoder with a bilinear Upsample (3x32x32), clean export"),
    ExampleInfo("unet-resize", "tiny encoder-decoder whose Resize node uses coordinate mode 'asymmetric' "
                "where PyTorch's align_corners=False means 'half_pixel'",
                expected_origin="up1", cause="interpolation"),
]}
