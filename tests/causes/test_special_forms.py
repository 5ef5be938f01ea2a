"""core/model/special_forms.py and scatter_forms.py: drifttui's own definitions of the ATen ops whose exporter
lowering is unstable (erfc, erfcx) or computes another function (scatter_reduce's mean), the make_fx
re-trace route's table.  Checked against torch (float64 where torch's float32 kernel is the question) on
the arguments that break the lowerings, and the re-traced module, exported by both real exporters, runs in
real ONNX Runtime to torch's values where the dynamo exporter's own file does not."""
from __future__ import annotations

import warnings

import numpy as np
import pytest


def test_the_stable_forms_are_accurate_to_float32_over_the_whole_range():
    import torch

    from drifttui.core.model import special_forms as sf

    x = torch.linspace(-9.0, 9.0, 40_001)
    ref = torch.special.erfc(x.double())
    normal = ref > 1.2e-38                       # below it float32 holds only a denormal
    rel = ((sf.erfc(x).double() - ref).abs() / ref)[normal]
    assert rel.max() < 1e-6, rel.max()
    big = torch.cat([x, torch.logspace(1, 30, 200)])
    ref = torch.special.erfcx(big.double())
    finite = torch.isfinite(ref) & (ref < 3e38)
    rel = ((sf.erfcx(big).double() - ref).abs() / ref)[finite]
    assert rel.max() < 1e-6, rel.max()
    assert torch.isinf(sf.erfcx(torch.tensor([-10.0]))).all()          # torch's inf where exp(x^2) is


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_mean_by_its_definition_is_torchs(dtype, include_self):
    import torch

    from drifttui.core.model.scatter_forms import scatter_reduce

    g = torch.Generator().manual_seed(3)
    for dim in (0, 1):
        self_ = (torch.randn(4, 5, generator=g) * 9).to(getattr(torch, dtype))
        src = (torch.randn(6, 7, generator=g) * 9).to(self_.dtype)
        idx = torch.randint(0, 4 if dim == 0 else 5, (3, 4), generator=g)
        want = self_.scatter_reduce(dim, idx, src, "mean", include_self=include_self)
        assert torch.equal(scatter_reduce(self_, dim, idx, src, "mean", include_self=include_self), want)
    assert scatter_reduce(self_, 0, idx, src, "amax") is NotImplemented        # left to the exporter


def _export_run(fn, x, exporter, tmp_path, retrace):
    import onnxruntime as ort
    import torch

    from drifttui.core.model.export import export_model

    class M(torch.nn.Module):
        def forward(self, t):
            return fn(t)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = export_model(M().eval(), (x,), {}, exporter, tmp_path, f"m-{retrace}.onnx", retrace=retrace)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        want = fn(x).numpy()
    return sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0], want


def _forms():
    import torch

    idx = torch.tensor([[0, 2, 0, 1, 2, 2]])
    return {"log_erfc": lambda t: torch.log(torch.erfc(t.abs() + 3.0)),
            "erfcx": lambda t: torch.special.erfcx(t * 6.0),
            "log_ndtr": lambda t: torch.special.log_ndtr(t * 20.0),
            "scatter_mean": lambda t: torch.ones(t.shape[0], 3).scatter_reduce(
                1, idx.expand(t.shape[0], 6), t[:, :6], "mean", include_self=False)}


@pytest.mark.parametrize("name", ["log_erfc", pytest.param("erfcx", marks=pytest.mark.drifts),
                                  pytest.param("log_ndtr", marks=pytest.mark.drifts),
                                  pytest.param("scatter_mean", marks=pytest.mark.drifts)])
def test_the_re_traced_module_computes_what_torch_computes_where_the_dynamo_file_does_not(name, tmp_path):
    import torch

    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(4)) * 1.5
    fn = _forms()[name]
    plain, want = _export_run(fn, x, "dynamo", tmp_path, retrace=False)
    assert not np.allclose(plain, want, rtol=1e-4, atol=1e-4, equal_nan=True)      # the drift is real
    for exporter in ("torchscript", "dynamo"):
        (tmp_path / exporter).mkdir()
        got, want = _export_run(fn, x, exporter, tmp_path / exporter, retrace=True)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_re_trace_through_a_definition_is_told_by_what_it_changed():
    from drifttui.core.explain.causes.propose.reexport.definitions import told

    # the node over the tolerance is the Log after an erfc that cancelled: the defined op tells the story
    erfc = told(["aten.log.default", "aten.erfc.default"], "dynamo")
    assert erfc.check == "stability" and "aten.erfc.default as 1 - Erf(x)" in erfc.why
    assert "torch.erfc" in erfc.fix and "onnxscript#822" in erfc.fix
    erfcx = told(["aten.special_erfcx.default"], "dynamo")
    assert erfcx.check == "stability" and "torch.special.erfcx" in erfcx.fix and "onnxscript#1223" in erfcx.fix
    mean = told(["aten.scatter_reduce.two"], "dynamo")
    assert mean.check == "lowering" and "reduction='none'" in mean.why and "onnx/onnx#5100" in mean.fix
    # ops drifttui defines for another reason (cdist, signbit) or not at all keep the re-trace's own story
    assert told(["aten._cdist_forward.default", "aten.add.Tensor"], "dynamo") is None
