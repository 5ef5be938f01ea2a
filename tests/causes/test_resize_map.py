"""The two Resize edits of ``onnx/edit/lowerings/resize_map.py`` on a one-node file the dynamo exporter writes for an
antialiased ``F.interpolate``, run in real ONNX Runtime against torch: given the call's scales (a scale factor
whose output size is not whole) and replaced by torch's weights measured from the call (``align_corners=True``)."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F

from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.edits.resize_map import _weights
from drifttui.core.onnx.edit.patches import Patch, apply


class Interp(torch.nn.Module):
    def __init__(self, **kw) -> None:
        super().__init__()
        self.kw = kw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, antialias=True, **self.kw)


def _exported(tmp_path, module, x):
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), str(path), dynamo=True)
    model = onnx.load(str(path))
    resize = next(n for n in model.graph.node if n.op_type == "Resize")
    return model, resize.name


def _max_err(model, module, x) -> float:
    got = run_ort(model, {model.graph.input[0].name: x.numpy()})[model.graph.output[0].name]
    with torch.no_grad():
        return float(np.abs(got - module(x).numpy()).max())


@pytest.mark.parametrize("mode", ["bilinear", pytest.param("bicubic", marks=pytest.mark.drifts)])
def test_the_calls_scales_make_the_resize_sample_where_torch_samples(tmp_path, mode):
    torch.manual_seed(0)
    module, x = Interp(scale_factor=0.4, mode=mode), torch.randn(1, 2, 16, 16)
    model, node = _exported(tmp_path, module, x)
    assert _max_err(model, module, x) > 1e-3                    # the lowering gives Resize the sizes 6x6
    fixed = apply(model, Patch({"op": "rewrite", "node": node, "rewrite": "resize_scales",
                                "scales": [1.0, 1.0, 0.4, 0.4]}, "lowering", "", ""))
    assert _max_err(fixed, module, x) < 1e-5


def test_torchs_measured_weights_replace_a_resize_no_attribute_makes_right(tmp_path):
    torch.manual_seed(0)
    module, x = Interp(size=(6, 5), mode="bilinear", align_corners=True), torch.randn(1, 2, 16, 16)
    model, node = _exported(tmp_path, module, x)
    assert _max_err(model, module, x) > 1e-3
    rows, cols = _weights("aten._upsample_bilinear2d_aa.default", (None, [6, 5], True), {}, tuple(x.shape))
    assert rows.shape == (6, 16) and cols.shape == (5, 16) and np.allclose(rows.sum(1), 1.0, atol=1e-6)
    fixed = apply(model, Patch({"op": "rewrite", "node": node, "rewrite": "resize_matmul", "rows": rows.tolist(),
                                "cols": cols.tolist()}, "lowering", "", ""))
    assert not any(n.op_type == "Resize" for n in fixed.graph.node)
    assert _max_err(fixed, module, x) < 1e-5
