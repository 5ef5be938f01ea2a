"""Two mechanisms stacked at an ill-conditioned origin (propose/numerics/torch_rounding.py, locate/evaluate.py's
``dwarfed``): ONNX Runtime's ``Range`` adds ``delta`` to a float32 running value, 100 times the tolerance off, on a
phase whose float32 value torch itself holds only to more than the tolerance (torch's vectorised ``arange`` is a unit
in the last place off its float64 value, amplified by the phase).  The reference evaluator is then off torch too, so
the localisation says "the graph", yet ONNX Runtime's kernel adds most of the drift: that kernel is still found, and
its float64 patch, which leaves only the size of torch's own float32 rounding, verifies to that precision.  Real
ONNX Runtime and torch on a bare graph; the trial rule on the trials verify makes."""
from __future__ import annotations

import math

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.conclude import Trial
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import Eval, localise
from drifttui.core.explain.causes.propose.numerics.conditioning import _torch64
from drifttui.core.explain.causes.propose.numerics.kernel64 import deviating_kernels, kernel64_patches
from drifttui.core.explain.causes.propose.numerics.torch_rounding import within_torch_rounding
from drifttui.core.onnx.edit.patches import Patch


def _tone(freq: float) -> tuple[onnx.ModelProto, dict, np.ndarray]:
    """``sin(2 pi freq t)`` of the times of 3000 frames at a 10 ms hop, ``Range(0, 29.995, 0.01)``."""
    g = np.asarray(2 * math.pi * freq, np.float32)
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["t"], name="range"),
             helper.make_node("Mul", ["t", "gain"], ["phase"], name="mul"),
             helper.make_node("Sin", ["phase"], ["y"], name="sin")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in
                                           ("start", "limit", "delta")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(g, "gain")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    feeds = {"start": np.asarray(0.0, np.float32), "limit": np.asarray(29.995, np.float32),
             "delta": np.asarray(0.01, np.float32)}
    want = torch.sin(torch.arange(0.0, 29.995, 0.01) * float(g)).numpy()
    return model, feeds, want


def test_a_kernel_that_dwarfs_the_graphs_own_error_is_still_found():
    model, feeds, want = _tone(50.0)
    case = Case(model, feeds, {"y": want}, "body", 0, 0, 1e-4, 1e-4, nodes=["range", "mul", "sin"], opset=18)
    loc = localise(case)
    assert loc.kind == "export" and loc.reference.fails       # the reference is off torch at 50 Hz too
    assert loc.dwarfed and loc.ort.max_abs >= 10 * loc.reference.max_abs
    assert "adds most of the drift" in loc.note
    assert [e["node"] for e in deviating_kernels(loc)] == ["range"]
    [patch] = kernel64_patches(case, loc)
    assert patch.spec["rewrite"] == "kernel_float64" and "adds most of the drift" in patch.why


def test_a_graph_whose_error_is_its_own_names_no_kernel():
    """The same graph fed a wrong limit: the reference and ONNX Runtime are off alike, nothing dwarfs."""
    model, feeds, want = _tone(4.0)
    want = want[::-1].copy()
    case = Case(model, feeds, {"y": want}, "body", 0, 0, 1e-4, 1e-4, nodes=["range", "mul", "sin"], opset=18)
    loc = localise(case)
    assert loc.kind == "export" and not loc.dwarfed and deviating_kernels(loc) == []


def _kernel() -> Patch:
    return Patch({"op": "rewrite", "rewrite": "kernel_float64", "node": "range", "nodes": ["range"]}, "op-compat",
                 "ONNX Runtime's Range kernel computes otherwise", "report it", "runtime", nodes=["range"])


def _whole() -> Patch:
    return Patch({"op": "rewrite", "rewrite": "origin_float64", "node": "range", "nodes": ["range", "sin"]},
                 "stability", "the origin in float64", "", "export", nodes=["range", "sin"])


def test_a_patch_that_leaves_torchs_own_rounding_is_verified_to_that_precision():
    before = Eval(0.05, True)
    trials = [Trial(_kernel(), Eval(3.9e-4, True)), Trial(_whole(), Eval(3.6e-4, True))]
    got = within_torch_rounding(trials, before, 3.5e-4, Trial)
    assert got is not None and got.patch.spec["rewrite"] == "kernel_float64"    # a mechanism, not the whole origin
    assert got.after.ok and not got.after.fails and got.after.max_abs == 3.9e-4
    assert "torch's own float32 rounding" in got.patch.why and got.patch.why.startswith("ONNX Runtime's Range")


def test_a_patch_is_not_verified_when_torchs_float32_holds_or_the_patch_leaves_more():
    before = Eval(0.05, True)
    assert within_torch_rounding([Trial(_kernel(), Eval(3.9e-4, True))], before, None, Trial) is None
    assert within_torch_rounding([Trial(_kernel(), Eval(3.9e-3, True))], before, 3.5e-4, Trial) is None
    assert within_torch_rounding([Trial(_kernel(), Eval(3.9e-4, True))], Eval(1e-3, True), 3.5e-4, Trial) is None
    assert within_torch_rounding([Trial(_whole(), Eval(3.6e-4, True))], before, 3.5e-4, Trial) is None



def _stacked(*members: dict) -> Patch:
    return Patch({"op": "sequence", "patches": list(members)}, "dtype", "a float16 scalar and the roundings ONNX "
                 "Runtime drops", "", "export", nodes=["mul", "sin"])


def test_a_sequence_of_named_mechanisms_is_verified_to_torchs_precision_a_sequence_with_a_whole_region_is_not():
    """Two float16 stories stacked (``opmath_stacked.py``: a Python scalar held in float16, then ``per_op``) whose
    remainder is torch's own rounding amplified by a ``sin`` of a large argument (forms46u's ``fourier_amp``): the
    sequence names its mechanisms, each member; a sequence holding a region's float64 does not."""
    scalar = {"op": "rewrite", "rewrite": "opmath_scalar", "node": "mul", "input": 1, "value": 6.283185307179586}
    per_op = {"op": "rewrite", "rewrite": "opmath_float32", "form": "per_op", "node": "mul", "nodes": ["mul", "sin"]}
    before = Eval(0.127, True)
    got = within_torch_rounding([Trial(_stacked(scalar, per_op), Eval(7.1e-3, True))], before, 8.6e-2, Trial)
    assert got is not None and got.patch.spec["op"] == "sequence" and not got.after.fails
    assert within_torch_rounding([Trial(_stacked(scalar, _whole().spec), Eval(7.1e-3, True))], before, 8.6e-2,
                                 Trial) is None
    assert within_torch_rounding([Trial(_stacked(), Eval(7.1e-3, True))], before, 8.6e-2, Trial) is None

class _Tone(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.sin(2 * math.pi * 50 * torch.arange(0.0, x.shape[0] * 0.01 - 0.005, 0.01))


def test_the_float64_counterfactual_makes_the_forwards_factories_in_float64():
    """torch's float32 ``arange`` is a unit in the last place off its float64 value at 30 s; the module in float64 is
    its factories too, or the counterfactual keeps the very rounding it is meant to measure."""
    x = torch.zeros(3000)
    [got] = _torch64(_Tone(), [x])
    exact = np.sin(2 * math.pi * 50 * (np.arange(3000) * 0.01))
    assert got.dtype == np.float64 and np.abs(got - exact).max() < 1e-9
    assert torch.get_default_dtype() == torch.float32 and torch.arange(0.0, 1.0, 0.5).dtype == torch.float32


def test_at_a_float16_origin_a_named_patch_heads_a_conditioning_counterfactual_verified_first(monkeypatch):
    """``conditioned_first`` verified the float64 counterfactual before the re-exports (its float64 drops the model's
    own float16 too); ``_last_resorts`` still tries the rule, and the stacked float16 patch that leaves torch's own
    rounding is verified beside it (it heads: a graph edit).  At a float32 origin the counterfactual stands alone."""
    from drifttui.core.explain.causes import verify as v

    scalar = {"op": "rewrite", "rewrite": "opmath_scalar", "node": "mul", "input": 1, "value": 6.283185307179586}
    per_op = {"op": "rewrite", "rewrite": "opmath_float32", "form": "per_op", "node": "mul", "nodes": ["mul", "sin"]}
    cond = Patch({"op": "float64", "module": "body", "torch_own_error": 8.6e-2}, "stability", "ill-conditioned", "",
                 "model", module="body")
    monkeypatch.setattr(v, "torch_own_error", lambda ctx, case: 8.6e-2)
    monkeypatch.setattr(v, "measured_map_patches", lambda ctx, case: [])

    class _Loc:
        ort, torch_op = Eval(0.127, True), None

    for low, heads in ((True, True), (False, False)):
        monkeypatch.setattr(v, "computes_low", lambda case, low=low: low, raising=False)
        trials = [Trial(_stacked(scalar, per_op), Eval(7.1e-3, True)), Trial(cond, Eval(3e-8, False))]
        v._last_resorts(None, None, _Loc(), trials)
        named = [t for t in trials if t.patch.spec["op"] == "sequence" and not t.after.fails]
        assert bool(named) == heads, trials
