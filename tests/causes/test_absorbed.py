"""Issue 30 point 6: a module whose output the exporter absorbed into its reader (a ``.t()`` folded
into the reading Gemm) is split from that reader at the value it hands on, seen through the view
(``core/prepare/plan/absorbed.py``): the origin is the module whose own computation differs, never
the reader fed its values, and a clean module whose square ``.t()`` was absorbed is not compared
with its own transpose.  Real exporters, real ONNX Runtime, deep models (tests/causes/absorbed_forms.py).
"""
from __future__ import annotations


import pytest

from tests.causes.absorbed_suite import assert_the_one_origin_verified_and_repaired, explained_forms, params


# (model, exporter) -> (origin, class, words of the headline)
DRIFTS = {
    ("floor_t", "torchscript"): ("body.absorbed", "dtype", "truncates towards zero"),
    ("signbit_t", "dynamo"): ("body.absorbed", "lowering", "aten.signbit"),
    # a weight module constant-folded into one constant its parent reads: no node of its own at all
    ("tied_floor", "torchscript"): ("body.wt", "lowering", "the file holds body.wt's result as the constant"),
    ("tied_signbit", "dynamo"): ("body.wt", "lowering", "aten.signbit"),
}
CLEAN = [("clean_sq", "torchscript"), ("clean_sq", "dynamo"), ("relu_t", "torchscript"), ("relu_t", "dynamo"),
         ("tied_floor", "dynamo")]
FAST = {("floor_t", "torchscript"), ("clean_sq", "torchscript"), ("tied_floor", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "absorbed_forms")


@pytest.mark.parametrize("form", params(DRIFTS, FAST))
def test_the_absorbed_module_is_the_origin_verified_and_repaired(explained, form):
    assert_the_one_origin_verified_and_repaired(explained, form, DRIFTS[form])


@pytest.mark.parametrize("form", params(CLEAN, FAST))
def test_clean_absorbed_views_pass(explained, form):
    _, _, run, result, exp = explained(*form)
    assert result.verdict == "ok" and result.drift_origin is None, [(L.module, L.status) for L in result.layers]
    assert not [f for f in exp.findings if f.severity == "error"]


def test_the_square_transpose_is_compared_through_its_view(explained):
    """TorchScript folds the square ``.t()`` into mix's Gemm: absorbed's output is its value transposed
    (the plan says so), and mix reads it back through the way back, in mix's own scope."""
    _, _, run, _, _ = explained("clean_sq", "torchscript")
    pr = run.prepared
    by_name = {c.module: c.index for c in pr.calls}
    cm = pr.plan.calls[by_name["body.absorbed"]]
    assert cm.outputs[0].endswith("::absorbed") and "absorbed its last view" in cm.note
    mix = pr.plan.calls[by_name["body.mix"]]
    assert any(pr.index.nodes[n].name.endswith("drifttui_unabsorbed_0") for n in mix.own)
