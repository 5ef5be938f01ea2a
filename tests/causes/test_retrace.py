"""core/model/retrace.py: the make_fx re-trace into core ATen, the route a re-export takes when no
exporter, opset or torch decomposition computes a lowering right.  Each definition is checked against
torch on inputs that break the exporters' lowerings (negative zero, exp overflow, every p, a float
bound on an integer tensor), and the re-traced module, exported by real exporters, runs in real ONNX
Runtime to torch's values.  The modules here are not forms32's: other p, other dims, other shapes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest


def _export_run(module, x, exporter: str, tmp_path):
    import onnxruntime as ort
    import torch

    from drifttui.core.model.export import export_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = export_model(module, (x,), {}, exporter, tmp_path, "m.onnx", retrace=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        want = module(x).numpy()
    return sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0], want


def _module(fn):
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            return fn(x)

    return M().eval()


def test_the_definitions_compute_what_torch_computes():
    import torch

    from drifttui.core.model import retrace as r

    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(5, 7, generator=g), torch.randn(4, 7, generator=g)
    for p in (0.0, 1.0, 2.0, 3.0, float("inf")):
        x, y = (a.round(), b.round()) if p == 0 else (a, b)
        assert torch.allclose(r._cdist(x, y, p), torch.cdist(x, y, p=p), atol=1e-5), p
    z = torch.tensor([-0.0, 0.0, -1.0, 2.0, float("-inf"), float("nan")])
    assert torch.equal(r._signbit(z), torch.signbit(z))
    big = torch.randn(3, 9, generator=g) * 300
    for dim in (0, 1, -1):
        assert torch.allclose(r._logcumsumexp(big, dim), torch.logcumsumexp(big, dim), rtol=1e-6)
    n = torch.arange(-5, 6)
    for lo, hi in ((-2.5, None), (-2.5, 3), (None, 1.5), (-2, 3)):
        got, want = r._clamp(n, lo, hi), torch.clamp(n, min=lo, max=hi)
        assert got.dtype == want.dtype and torch.equal(got, want), (lo, hi)


@pytest.mark.parametrize("name,exporter", [("cdist3", "torchscript"), ("signbit", "dynamo"),
                                           ("logcumsumexp0", "dynamo"), ("clamp_mixed", "torchscript")])
def test_a_re_traced_module_exports_to_what_torch_computes(name, exporter, tmp_path):
    import torch

    x = torch.randn(6, 16, generator=torch.Generator().manual_seed(2)) * 3
    fn = {"cdist3": lambda t: torch.cdist(t, t.flip(0), p=3.0),
          "signbit": lambda t: torch.signbit(torch.round(t * 0.2)).float(),
          "logcumsumexp0": lambda t: torch.logcumsumexp(t * 80.0, 0),
          "clamp_mixed": lambda t: torch.clamp((t * 2).long(), min=-1.5, max=4)}[name]
    got, want = _export_run(_module(fn), x, exporter, tmp_path)
    assert got.dtype == want.dtype and np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
