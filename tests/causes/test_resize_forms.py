"""core/model/resize_forms.py: the bilinear resize of uint8 images by torch's definition (separable, the width
first, int16 fixed-point weights, each pass rounded to uint8), the make_fx re-trace route's table.  Checked
against torch's kernel level for level on up- and downsampling, align_corners both ways, scale factors and
channel counts on either side of the AVX path's 4, and the re-traced module, exported by both real exporters,
runs in real ONNX Runtime to torch's values where the exporters' own files (a Resize rounded once) do not."""
from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F

_SIZES = [(4, 8, 8, 4), (7, 5, 13, 11), (16, 16, 9, 23), (8, 8, 3, 5), (10, 17, 4, 40), (33, 21, 7, 64)]


def _image(c, h, w, seed=0):
    return torch.randint(0, 256, (2, c, h, w), generator=torch.Generator().manual_seed(seed), dtype=torch.uint8)


@pytest.mark.parametrize("channels", [1, 3, 5])
@pytest.mark.parametrize("align_corners", [False, True])
def test_the_definition_is_torchs_uint8_resize_level_for_level(channels, align_corners):
    from drifttui.core.model.resize_forms import upsample_bilinear2d_vec

    for i, (h, w, oh, ow) in enumerate(_SIZES):
        u = _image(channels, h, w, i)
        want = F.interpolate(u, size=(oh, ow), mode="bilinear", align_corners=align_corners)
        assert torch.equal(upsample_bilinear2d_vec(u, (oh, ow), align_corners, None), want), (h, w, oh, ow)


@pytest.mark.parametrize("factor", [1.7, 0.35, 2.0, 0.5])
def test_the_definition_follows_torchs_scale_factor_rule(factor):
    from drifttui.core.model.resize_forms import upsample_bilinear2d_vec

    u = _image(3, 9, 11)
    assert torch.equal(upsample_bilinear2d_vec(u, None, False, (factor, factor)),
                       F.interpolate(u, scale_factor=factor, mode="bilinear"))


class Resize(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = (x.abs() * 60.0).clamp(0, 255).to(torch.uint8)
        return F.interpolate(u, size=(13, 11), mode="bilinear").float()


def test_a_float_resize_is_left_to_the_exporter():
    from drifttui.core.model.retrace import retrace

    class FloatResize(torch.nn.Module):
        def forward(self, x):
            return F.interpolate(x, size=(13, 11), mode="bilinear")

    x = torch.randn(1, 3, 7, 5)
    gm = retrace(FloatResize(), (x,))
    assert any("upsample_bilinear2d" in str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    uint8 = retrace(Resize(), (x,))
    assert not any("upsample" in str(n.target) for n in uint8.graph.nodes if n.op == "call_function")


def _ort(path, x):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x.numpy()})[0]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_exported_re_trace_runs_to_torchs_levels_where_the_export_does_not(tmp_path, exporter):
    from drifttui.core.model.retrace import retrace

    x = torch.randn(2, 3, 7, 5, generator=torch.Generator().manual_seed(1)) * 2
    m = Resize()
    want = m(x).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), str(tmp_path / "own.onnx"), dynamo=exporter == "dynamo")
        torch.onnx.export(retrace(m, (x,)), (x,), str(tmp_path / "def.onnx"), dynamo=exporter == "dynamo")
    assert np.abs(_ort(tmp_path / "own.onnx", x) - want).max() == 1.0          # one level off somewhere
    np.testing.assert_array_equal(_ort(tmp_path / "def.onnx", x), want)
