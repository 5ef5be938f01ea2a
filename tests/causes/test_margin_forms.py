"""core/model/margin_forms.py: drifttui's definition of aten.multilabel_margin_loss_forward (torch's own
decomposition keeps the target slots after the first -1 in the sum), checked against torch's kernel on every
reduction and rank, and the module re-traced through it, exported by the dynamo exporter, run in real ONNX
Runtime to torch's values (the forms of test_forms37.py are not these: other shapes, other targets)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from drifttui.core.model.margin_forms import multilabel_margin_loss_forward
from drifttui.core.model.retrace import definition_of


def _targets(shape: tuple, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(-1, shape[-1], shape, generator=g)
    t[..., 0] = shape[-1] - 1           # at least one target, then whatever: a -1 anywhere ends the row
    return t


@pytest.mark.parametrize("shape", [(7, 10), (9,), (3, 1), (4, 5)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_the_definition_is_torchs_kernel_where_torchs_decomposition_is_not(shape, reduction):
    from torch._decomp import decomposition_table

    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    t = _targets(shape, 2)
    r = {"none": 0, "mean": 1, "sum": 2}[reduction]
    want = F.multilabel_margin_loss(x, t, reduction=reduction)
    loss, is_target = multilabel_margin_loss_forward(x, t, r)
    assert loss.shape == want.shape and torch.allclose(loss, want, atol=1e-6)
    assert torch.equal(is_target, torch.ops.aten.multilabel_margin_loss_forward(x, t, r)[1])
    if shape == (7, 10):        # the decomposition the dynamo exporter lowers through is the wrong one here
        theirs = decomposition_table[torch.ops.aten.multilabel_margin_loss_forward.default](x, t, r)[0]
        assert not torch.allclose(theirs, want, atol=1e-3)


def test_the_retraced_module_exports_and_runs_to_torchs_values(tmp_path):
    import onnxruntime as ort

    from drifttui.core.model.export import export_model

    class M(torch.nn.Module):
        def forward(self, x):
            t = torch.full_like(x, -1, dtype=torch.long)
            t[:, :2] = torch.topk(x, 2, -1).indices
            return F.multilabel_margin_loss(x * 3.0, t, reduction="none")

    x = torch.randn(5, 12, generator=torch.Generator().manual_seed(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = export_model(M(), (x,), {}, "dynamo", tmp_path, "m.onnx", retrace=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    assert np.allclose(got, M()(x).numpy(), atol=1e-5)


def test_the_record_tells_a_lowering_story_naming_torchs_decomposition():
    d = definition_of("aten.multilabel_margin_loss_forward.default")
    assert d is not None and d.check == "lowering"
    said = d.story("aten.multilabel_margin_loss_forward.default", "dynamo")
    assert "first -1" in said and "decomposition" in said
