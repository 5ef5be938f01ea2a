"""A layer object called more than once (ALBERT shares one ``albert_layers.0`` between all its layers) in a
TorchScript file: TorchScript makes a scope path unique by a suffix on its last segment only, so the second
call's own nodes are ``layer_1/...`` while its child's are ``layer/attn_1/...`` and the grandchild's
``layer/attn/norm_1/...``.  Each call of every module must be compared at its own value: before, the second
call of ``attn`` lost its LayerNorm (the norm's nodes read as the first call's), its output was paired with the
residual Add before the norm, and the clean file was a DRIFT there (transformers' ALBERT: max |d| 0.46 with the
model outputs equal)."""
from __future__ import annotations

import torch
from torch import nn

from drifttui.core.pipeline import run_once
from drifttui.core.result import Config
from tests.models import off_identity

SPEC = f"{__file__}:shared"


class Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + torch.tanh(self.q(x)))


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = Attn()
        self.fc = nn.Linear(16, 16)
        self.out_norm = nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.attn(x)
        return self.out_norm(a + self.fc(a))


class Group(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.group = Group()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for _ in range(2):
            h = self.group(h)       # one layer group, called for every layer (ALBERT)
        return h


def shared() -> nn.Module:
    return off_identity(Shared)


def test_every_call_of_a_shared_layer_is_compared_at_its_own_value():
    r = run_once(Config(model=SPEC, inputs="shape:2x5x8", exporter="torchscript", samples=2)).result
    assert r.verdict == "ok", (r.drift_origin, [(L.module, L.call, L.status) for L in r.layers if L.status != "ok"])
    calls = {(L.module, L.call): L for L in r.layers}
    for module in ("group", "group.layers.0", "group.layers.0.attn", "group.layers.0.attn.norm"):
        first, second = calls[(module, 0)], calls[(module, 1)]
        assert first.status == second.status == "ok", (module, first.status, second.status, second.note)
        assert first.onnx_values and second.onnx_values and first.onnx_values != second.onnx_values, module
    # the second attention call's value is its LayerNorm's (the norm is the attention's last op)
    assert calls[("group.layers.0.attn", 1)].onnx_values == calls[("group.layers.0.attn.norm", 1)].onnx_values
    assert r.coverage.unmapped == 0
