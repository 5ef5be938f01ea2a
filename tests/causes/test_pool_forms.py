"""core/model/pool_forms.py: average pooling with ``divisor_override`` by torch's definition, the make_fx re-trace
route's table.  Checked against torch's kernel on windows the exporters' lowerings part from (padding, ceil_mode's
clipped windows, count_include_pad=False, 2-D and 3-D), and the re-traced module, exported by both real exporters,
runs in real ONNX Runtime to torch's values where the exporters' own files do not (pytorch/pytorch#105349)."""
from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F

# (name, dims, kwargs, input shape)
_CALLS = {
    "pad_stride1": (2, dict(kernel_size=3, stride=1, padding=1, divisor_override=4), (2, 2, 4, 4)),
    "ceil_clipped": (2, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=3), (1, 3, 7, 8)),
    "exclude_pad": (2, dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), ceil_mode=True,
                            count_include_pad=False, divisor_override=5), (3, 5, 6)),
    "default_stride": (2, dict(kernel_size=2, divisor_override=2), (1, 2, 5, 5)),
    "pool3d_pad": (3, dict(kernel_size=(3, 1, 3), stride=1, padding=(1, 0, 1), divisor_override=5), (2, 1, 4, 2, 4)),
    "pool3d_ceil": (3, dict(kernel_size=2, stride=2, ceil_mode=True, divisor_override=7), (1, 2, 5, 5, 3)),
}


class Pool(torch.nn.Module):
    def __init__(self, dims: int, kw: dict) -> None:
        super().__init__()
        self.dims, self.kw = dims, kw

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return (F.avg_pool2d if self.dims == 2 else F.avg_pool3d)(t, **self.kw)


def _x(shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("name", list(_CALLS))
def test_the_re_trace_divides_the_window_sums_by_the_override(name):
    from drifttui.core.model.retrace import retrace

    dims, kw, shape = _CALLS[name]
    x, m = _x(shape), Pool(dims, kw)
    gm = retrace(m, (x,))
    np.testing.assert_allclose(gm(x).numpy(), m(x).numpy(), rtol=1e-6, atol=1e-6)
    called = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not any("avg_pool" in c for c in called), called        # no AveragePool left to lower


def test_a_pool_without_override_is_left_to_the_exporter():
    from drifttui.core.model.pool_forms import overridden
    from drifttui.core.model.retrace import retrace

    m = Pool(2, dict(kernel_size=3, stride=2, padding=1))
    gm = retrace(m, (_x((1, 3, 7, 8)),))
    pools = [n for n in gm.graph.nodes if n.op == "call_function" and "avg_pool2d" in str(n.target)]
    assert len(pools) == 1 and not overridden(tuple(pools[0].args), dict(pools[0].kwargs))
    assert overridden((None,) * 6 + (4,), {}) and overridden((), {"divisor_override": 2})


def _ort(path, x):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x.numpy()})[0]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_exported_re_trace_runs_to_torchs_values_where_the_export_does_not(tmp_path, exporter):
    from drifttui.core.model.retrace import retrace

    dims, kw, shape = _CALLS["ceil_clipped"]
    x, m = _x(shape), Pool(dims, kw)
    want = m(x).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), str(tmp_path / "own.onnx"), dynamo=exporter == "dynamo")
        torch.onnx.export(retrace(m, (x,)), (x,), str(tmp_path / "def.onnx"), dynamo=exporter == "dynamo")
    assert np.abs(_ort(tmp_path / "own.onnx", x) - want).max() > 0.1          # the override dropped
    np.testing.assert_allclose(_ort(tmp_path / "def.onnx", x), want, rtol=1e-5, atol=1e-6)
