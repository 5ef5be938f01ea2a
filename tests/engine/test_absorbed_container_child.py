"""A container and its last child hand on one value whose last view the exporter absorbed into the reader (timm's
LeViT: ``q`` is a Sequential ending in the LinearNorm ``q.ln``, which returns its BatchNorm's flattened output
reshaped back; the dynamo exporter merges that Reshape into the attention's head split).  Both calls claim the
flattened value as their output through one view; the round trip went in the container's scope, where the child
cannot see it, and the child stayed unmapped (LeViT-128S dynamo: 2 calls unmapped in the raw export).  The view
now goes in the child's scope, which the container's nodes hold too: both are compared."""
from __future__ import annotations

from pathlib import Path

import onnx
import torch
from torch import nn

from drifttui.core.pipeline import run_once
from drifttui.core.result import Config

SPEC = f"{__file__}:model"


class LinearNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.linear = nn.Linear(d, d, bias=False)
        self.bn = nn.BatchNorm1d(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class Attn(nn.Module):
    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Sequential(nn.Identity(), LinearNorm(d))
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q = self.q(x).view(b, n, self.heads, -1).permute(0, 2, 1, 3)
        a = (q @ q.transpose(-2, -1)).softmax(-1) @ q
        return self.proj(a.permute(0, 2, 1, 3).reshape(b, n, c))


def model() -> nn.Module:
    torch.manual_seed(0)
    m = nn.Sequential(Attn(), Attn())
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm1d):
            mod.running_mean.uniform_(-1, 1)
            mod.running_var.uniform_(0.5, 2.0)
    return m.eval()


def test_a_container_and_its_last_child_both_compared_at_the_absorbed_value():
    r = run_once(Config(model=SPEC, inputs="shape:2x6x16", exporter="dynamo", samples=1)).result
    assert r.verdict == "ok", r.drift_origin
    assert r.coverage.unmapped == 0, [(L.module, L.note) for L in r.layers if L.status == "unmapped"]
    layers = {L.module: L for L in r.layers}
    for i in ("0", "1"):
        assert layers[f"{i}.q"].status == "ok" and layers[f"{i}.q.1"].status == "ok"
        assert "absorbed" in (layers[f"{i}.q.1"].note or "")


def _scopeless(raw: Path, dst: Path) -> Path:
    """The export as a graph tool leaves it: same computation, no node's scope or name left."""
    proto = onnx.load(str(raw))
    for k, node in enumerate(proto.graph.node):
        del node.metadata_props[:]
        node.name = f"n{k}"
    onnx.save(proto, str(dst))
    return dst


def test_a_processed_file_is_mapped_through_the_reference_absorbed_views(tmp_path):
    """Mapped through a reference export, the absorbed outputs were never looked for in the reference: every
    LinearNorm of LeViT-128S (dynamo) through onnxsim, onnxslim, the ONNX Optimizer, ORT, quantization: 15
    calls unmapped.  The reference's outputs absorbed into a reader are now found as a raw export's are."""
    raw = tmp_path / "raw.onnx"
    torch.onnx.export(model(), (torch.randn(2, 6, 16),), str(raw), dynamo=True)
    dep = _scopeless(raw, tmp_path / "dep.onnx")
    r = run_once(Config(model=SPEC, inputs="shape:2x6x16", onnx=str(dep), reference_onnx=str(raw),
                        samples=1)).result
    assert r.verdict == "ok", r.drift_origin
    assert r.coverage.unmapped == 0, [(L.module, L.note) for L in r.layers if L.status == "unmapped"]
