"""core/model/histc_forms.py: ``torch.histc`` by torch's definition, the make_fx re-trace route's table.  Checked
against torch's kernel on values on a grid of the bin edges (where torch's truncated ``(x - min) * bins / (max -
min)`` and torchlib's comparisons with rounded edges part), off the grid, out of range, NaN and at ``max``; and the
re-traced module, exported by both real exporters, runs in real ONNX Runtime to torch's counts where the dynamo
exporter's own file does not (microsoft/onnxscript's ``aten_histc``)."""
from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch

# (name, values, bins, min, max)
_CALLS = {
    "edges_0p05": (lambda g: torch.round(torch.randn(6, 32, generator=g).clamp(-1, 1) * 20) / 20, 40, -1, 1),
    "edges_0p1": (lambda g: torch.round(torch.randn(300, generator=g) * 15) / 10, 10, -2, 2),
    "off_grid": (lambda g: torch.randn(4, 50, generator=g) * 3, 7, -2.5, 4),
    "specials": (lambda g: torch.tensor([float("nan"), 1.0, 1.5, -3.0, float("inf"), 0.0, 0.25]), 4, 0, 1),
    "float64": (lambda g: torch.round(torch.randn(200, generator=g, dtype=torch.float64) * 10) / 10, 8, -1.6, 1.6),
}


class Hist(torch.nn.Module):
    def __init__(self, bins: int, lo: float, hi: float) -> None:
        super().__init__()
        self.bins, self.lo, self.hi = bins, lo, hi

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return torch.histc(t, bins=self.bins, min=self.lo, max=self.hi)


def _call(name):
    make, bins, lo, hi = _CALLS[name]
    return make(torch.Generator().manual_seed(5)), Hist(bins, lo, hi)


@pytest.mark.parametrize("name", list(_CALLS))
def test_the_definition_counts_what_torchs_kernel_counts(name):
    from drifttui.core.model.histc_forms import histc

    x, m = _call(name)
    assert torch.equal(histc(x, m.bins, m.lo, m.hi), m(x))


def test_the_re_trace_keeps_no_histc_and_leaves_a_data_range_to_the_exporter():
    from drifttui.core.model.retrace import retrace

    x, m = _call("edges_0p05")
    gm = retrace(m, (x,))
    assert torch.equal(gm(x), m(x))
    assert not any("histc" in str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    kept = retrace(Hist(5, 0, 0), (x,))            # min == max: the range from the data, the op kept
    assert any("histc" in str(n.target) for n in kept.graph.nodes if n.op == "call_function")


def _ort(path, x):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x.numpy()})[0]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_exported_re_trace_counts_torchs_bins_where_the_export_does_not(tmp_path, exporter):
    from drifttui.core.model.retrace import retrace

    x, m = _call("edges_0p05")
    want = m(x).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":                # TorchScript refuses histc itself
            torch.onnx.export(m, (x,), str(tmp_path / "own.onnx"), dynamo=True)
            assert np.abs(_ort(tmp_path / "own.onnx", x) - want).max() >= 1          # counts moved between bins
        torch.onnx.export(retrace(m, (x,)), (x,), str(tmp_path / "def.onnx"), dynamo=exporter == "dynamo")
    assert np.array_equal(_ort(tmp_path / "def.onnx", x), want)


def test_the_story_names_the_lowering_and_the_definition():
    from drifttui.core.explain.causes.propose.reexport.definitions import told

    said = told(["aten.histc.default"], "dynamo")
    assert said is not None and said.check == "lowering"
    assert "counts of the values below each edge" in said.why and "histc_forms.histc" in said.fix
