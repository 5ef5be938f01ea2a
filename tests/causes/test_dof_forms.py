"""core/model/dof_forms.py: the degrees-of-freedom reductions (var, var_mean, and through torch's decompositions
std, std_mean) by torch's definition, the make_fx re-trace route's table.  Checked against torch's kernel where
the exporters' lowerings part from it (correction >= N: inf, or NaN where every deviation is 0; a fractional
correction), and the re-traced module, exported by both real exporters, runs in real ONNX Runtime to torch's
values (inf and NaN in the same places) where the exporters' own files do not."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

# (name, call): correction past N, equal to N, fractional, negative, over every dim, over several dims
_CALLS = {
    "var_past_n": lambda t: t.var(-1, correction=3),
    "var_equal_n": lambda t: t.var(-1, correction=2),
    "var_fractional": lambda t: t.var(-1, correction=0.5, keepdim=True),
    "var_fraction_past_n": lambda t: t.var(-1, correction=2.5),
    "var_negative": lambda t: t.var(-1, correction=-1),
    "var_all": lambda t: t.var(correction=50),
    "var_default": lambda t: t.var(),
    "var_dims": lambda t: t.var((0, 2), correction=13, keepdim=True),
    "std_past_n": lambda t: t.std(-1, correction=3),
    "std_unbiased_single": lambda t: t[..., :1].std(-1),
    "var_mean_past_n": lambda t: torch.var_mean(t, -1, correction=4, keepdim=True),
    "std_mean_dims": lambda t: torch.std_mean(t, (0, 1), correction=20),
}


def _x():
    x = torch.randn(6, 4, 2, generator=torch.Generator().manual_seed(5))
    x[0, 0] = 0.25                       # a group whose deviations are all 0: torch's 0/0 = NaN
    return x


def _same(got, want):
    """Equal to float32 precision, with inf and NaN (and the sign of inf) in the same places."""
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", list(_CALLS))
def test_the_re_trace_computes_torchs_reduction_with_its_divisor(name):
    from drifttui.core.model.retrace import retrace

    class M(torch.nn.Module):
        def forward(self, t):
            return _CALLS[name](t)

    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, gm = M()(x), retrace(M(), (x,))
        got = gm(x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        _same(g.numpy(), w.numpy())
    called = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not any("var" in c or "std" in c for c in called), called        # no reduction left to lower


def _export_run(fn, x, exporter, path, retrace):
    import onnxruntime as ort

    from drifttui.core.model.export import export_model

    class M(torch.nn.Module):
        def forward(self, t):
            return fn(t)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = export_model(M().eval(), (x,), {}, exporter, path, f"m-{retrace}.onnx", retrace=retrace)
        with torch.no_grad():
            want = fn(x)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    want = want if isinstance(want, tuple) else (want,)
    return sess.run(None, {sess.get_inputs()[0].name: x.numpy()}), [w.numpy() for w in want]


@pytest.mark.parametrize("name", ["std_past_n", pytest.param("var_mean_past_n", marks=pytest.mark.drifts),
                                  pytest.param("var_dims", marks=pytest.mark.drifts),
                                  pytest.param("var_fractional", marks=pytest.mark.drifts)])
def test_the_re_traced_module_exports_torchs_values_where_the_exporters_files_do_not(name, tmp_path):
    fn, x = _CALLS[name], _x()
    drifted = []
    for exporter in ("torchscript", "dynamo"):
        (tmp_path / exporter).mkdir()
        plain, want = _export_run(fn, x, exporter, tmp_path / exporter, retrace=False)
        drifted.append(not all(np.allclose(p, w, rtol=1e-4, atol=1e-5, equal_nan=True) for p, w in zip(plain, want)))
        got, want = _export_run(fn, x, exporter, tmp_path / exporter, retrace=True)
        for g, w in zip(got, want):
            _same(g, w)
    assert any(drifted)                  # the drift is real (the fractional correction: TorchScript's only)


def test_a_re_trace_through_the_dof_definition_is_told_by_the_op_called():
    from drifttui.core.explain.causes.propose.reexport.definitions import told

    # the dynamo exporter's wrong node is prims.var (torch's decomposition); the story names the call
    std = told(["prims.var.default", "aten.std.correction"], "dynamo")
    assert std.check == "lowering" and "aten.std.correction as Mul(ReduceMean(d^2), N) / (N - correction)" in std.why
    assert "torch.std(..., correction=...)" in std.fix and "pytorch/pytorch#109186" in std.fix
    assert "dof_forms.var`" in std.fix and "reference_table()" in std.fix
    mean = told(["aten.var_mean.correction"], "torchscript")
    assert mean.check == "lowering" and "aten.var_mean.correction as" in mean.why and "dof_forms.var_mean" in mean.fix
    assert told(["prims.var.default", "aten.add.Tensor"], "dynamo") is None
