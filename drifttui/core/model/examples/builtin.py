"""The built-in examples as runnable models: each entry of the catalogue (``drifttui.core.model.examples``)
with its model, inputs and the ONNX edit that injects its drift.  Imports torch: the catalogue
itself, what ``drifttui examples`` prints, does not.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from drifttui.errors import InputError
from drifttui.core.model.examples import models
from drifttui.core.model.export import export_model
from drifttui.core.onnx.edit import surgery
from drifttui.core.onnx.io import save_model
from drifttui.core.model.examples.catalogue import CATALOGUE


@dataclass(frozen=True)
class Example:
    name: str
    description: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[torch.Generator], tuple]
    expected_origin: Optional[str] = None          # module qualified name, None for clean examples
    cause: str = ""                                # drift class (docs/drift-catalogue.md)
    onnx_transform: Optional[Callable[[Any, str], None]] = None   # edits the exported ModelProto
    deployed: Optional[Callable[[], torch.nn.Module]] = None      # the model that was exported, if different
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def drifted(self) -> bool:
        return self.expected_origin is not None

    def build_model(self) -> torch.nn.Module:
        return self.build().eval()

    def make_inputs(self, seed: int, zero: bool = False) -> tuple:
        gen = torch.Generator().manual_seed(seed)
        sample = self.inputs(gen)
        if zero:
            sample = tuple(torch.zeros_like(t) for t in sample)
        return sample

    def needs_custom_export(self) -> bool:
        return self.onnx_transform is not None or self.deployed is not None

    def export(self, model: torch.nn.Module, sample: Any, exporter: str, workdir: Path,
               dynamic: bool = False) -> Path:
        import onnx


        source = self.deployed().eval() if self.deployed is not None else model
        path = export_model(source, sample[0], sample[1], exporter, workdir, dynamic=dynamic)
        if self.onnx_transform is not None:
            proto = onnx.load(str(path))
            self.onnx_transform(proto, exporter)
            save_model(proto, path)
        return path


def _img(h: int, w: int) -> Callable[[torch.Generator], tuple]:
    return lambda g: (torch.randn(1, 3, h, w, generator=g),)


def _tokens(seq: int, vocab: int) -> Callable[[torch.Generator], tuple]:
    return lambda g: (torch.randint(0, vocab, (1, seq), generator=g),)


def _resnet() -> torch.nn.Module:
    return models._init(models.ResNet18(width=16), seed=18)


def _transformer(layer_scale: bool = False) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        m = models._init(models.TransformerEncoder(layer_scale=layer_scale), seed=7)
        if layer_scale:
            for mod in m.modules():
                if isinstance(mod, models.LayerScale):
                    mod.gamma = torch.full_like(mod.gamma, 0.5)
        return m
    return build


def _trained_layer_scale() -> torch.nn.Module:
    """The model as it was when exported: LayerScale gammas trained away from their init."""
    m = _transformer(layer_scale=True)()
    g = torch.Generator().manual_seed(11)
    for mod in m.modules():
        if isinstance(mod, models.LayerScale):
            mod.gamma = 0.5 + 0.2 * torch.randn(mod.gamma.shape, generator=g)
    return m


def _reloaded_layer_scale() -> torch.nn.Module:
    """What the user's code builds: a fresh model + the trained state_dict. gamma is not in it."""
    trained = _trained_layer_scale()
    fresh = _transformer(layer_scale=True)()
    fresh.load_state_dict(trained.state_dict())
    return fresh.eval()


def _unet() -> torch.nn.Module:
    return models._init(models.TinyUNet(width=8), seed=3)


def _example(name: str, build: Callable[[], torch.nn.Module], inputs: Callable[[torch.Generator], tuple],
             **extra: Any) -> Example:
    """An Example whose name, description, origin and cause come from the catalogue (one source)."""
    info = CATALOGUE[name]
    return Example(name, info.description, build, inputs, expected_origin=info.expected_origin,
                   cause=info.cause, **extra)


EXAMPLES: dict[str, Example] = {e.name: e for e in [
    _example("resnet18", _resnet, _img(64, 64)),
    _example("resnet18-bf16", _resnet, _img(64, 64),
             onnx_transform=surgery.round_conv_weight_bf16("layer3.1.conv1", "layer3.1.bn1")),
    _example("transformer", _transformer(), _tokens(16, 100)),
    _example("transformer-ln-eps", _transformer(), _tokens(16, 100),
             onnx_transform=surgery.set_layernorm_epsilon("layers.1.norm2", 1e-2)),
    _example("transformer-layerscale", _transformer(layer_scale=True), _tokens(16, 100)),
    _example("transformer-lost-gamma", _reloaded_layer_scale, _tokens(16, 100), deployed=_trained_layer_scale),
    _example("unet", _unet, _img(32, 32)),
    _example("unet-resize", _unet, _img(32, 32), onnx_transform=surgery.set_resize_mode("up1", "asymmetric")),
]}


def get_example(name: str) -> Example:
    if name not in EXAMPLES:
        raise InputError(f"no built-in example named {name!r}",
                         f"run `drifttui examples` to list them ({', '.join(EXAMPLES)})")
    return EXAMPLES[name]


# A drift in ONE BatchNorm channel (channel 5 of layer2.0.bn2 folded into its Conv, scaled by 2%):
# the drill-down's case ("which channels, which sample"); tests and the TUI fixtures export it.
BN_CHANNEL = ("resnet18", "layer2.0.conv2", "layer2.0.bn2", 5, 1.02)


def export_bn_channel_drift(workdir: Path, exporter: str = "dynamo") -> Path:
    """The clean ResNet example exported to ``workdir`` with one BatchNorm channel changed."""
    import onnx


    name, conv, bn, channel, factor = BN_CHANNEL
    ex = get_example(name)
    path = export_model(ex.build_model(), ex.make_inputs(0), {}, exporter, Path(workdir))
    proto = onnx.load(str(path))
    surgery.scale_conv_channel(conv, bn, channel, factor)(proto, exporter)
    out = Path(workdir) / "bn-channel.onnx"
    save_model(proto, out)
    return out
