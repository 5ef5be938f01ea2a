"""A value made from a parameter alone that the dynamo exporter folded into a constant of torch's element count but
other values (``locate/folded_values.py``; held-out batch 47C, tests/causes/forms47c.py).

DINOv2's ``interpolate_pos_encoding`` resamples its position embedding (a parameter) by ``scale_factor=(w0 + 0.1) /
M`` with ``antialias=True``: no input reaches it, so the dynamo exporter's optimizer folds it through ONNX's reference
``Resize``, which torchlib's antialiased lowering gives the output sizes, not torch's scale: the folded embedding is
up to 0.2 off torch's.  No ONNX node computes it, so the node-level localisation named the ``Add`` that reads it as
the wrong lowering and nothing verified.  A folded value made from Python numbers, parameters and buffers (no input:
the same for every input) whose constant holds other numbers is now the first wrong value, named by the chain's
first node that computes rather than moves numbers (the upsample, not the ``slice`` / ``view`` around it); torch's
value written into the constant is the patch.  The same code without antialias folds to torch's numbers."""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.folded_groups import folded_of


class PosEmbed(nn.Module):
    """a 3x3 position embedding of width 2 resampled to 4x4 by scale 4.1/3, added to 16 tokens."""

    def __init__(self, antialias: bool = True) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.pos = nn.Parameter(torch.randn(1, 2, 3, 3))
        self.antialias = antialias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = F.interpolate(self.pos, scale_factor=4.1 / 3, mode="bicubic", antialias=self.antialias)
        return (x.view(-1, 16, 2) + p.flatten(2).transpose(1, 2)).reshape(-1, 32)


def rows() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(4, 32)


def _folded(m: nn.Module, tmp_path: Path) -> tuple[list, object]:
    return folded_of(m, rows(), tmp_path / "pos.onnx")


def test_a_folded_resampled_parameter_with_other_values_is_named_by_its_resampling(tmp_path):
    import numpy as np

    from drifttui.core.explain.causes.locate.evaluate import run_ort
    from drifttui.core.onnx.edit.patches import Patch, apply

    m = PosEmbed().eval()
    (w,), proto = _folded(m, tmp_path)
    assert w.target == "aten._upsample_bicubic2d_aa.default" and w.fails, (w.target, w.folded)
    assert "holds values up to" in w.folded and "off torch's" in w.folded, w.folded
    const, value = w.held
    x = rows()
    want = m(x).detach().numpy()
    feed, out = proto.graph.input[0].name, proto.graph.output[0].name
    before = run_ort(proto, {feed: x.numpy()}, [out])[out]
    fixed = apply(proto, Patch({"op": "replace_constant", "name": const}, "lowering", "", "", payload=value))
    after = run_ort(fixed, {feed: x.numpy()}, [out])[out]
    assert np.abs(before - want).max() > 1e-2 and np.abs(after - want).max() < 1e-6


def test_a_folded_resampled_parameter_of_torch_s_numbers_is_not_named(tmp_path):
    assert _folded(PosEmbed(antialias=False).eval(), tmp_path)[0] == []


def test_the_fix_of_a_folded_parameter_offers_no_exporter_the_re_exports_did_not_vouch_for(tmp_path):
    """A value of parameters is a last resort, tried after the re-exports: TorchScript's did not compute torch's
    value (it refuses the antialiased upsample), so the fix does not send the user to it; a value of Python numbers,
    tried first, still may."""
    from types import SimpleNamespace

    from drifttui.core.explain.causes.propose.edits.folded_constant import folded_patches

    (w,), _ = _folded(PosEmbed().eval(), tmp_path)
    loc = SimpleNamespace(fx=SimpleNamespace(wrong=w, groups=[w], amplified=False), kind="graph")
    (patch,) = folded_patches(SimpleNamespace(module="body"), loc, last=True)
    assert patch.check == "lowering" and "buffer" in patch.fix and "TorchScript" not in patch.fix, patch.fix
    assert folded_patches(SimpleNamespace(module="body"), loc, last=False) == []
