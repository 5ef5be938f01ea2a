"""Held-out forms for the degrees-of-freedom definitions of the make_fx re-trace route (tests/causes/forms_dof.py;
issue 30 point 2, session 25): ``std``, ``var_mean``, ``std_mean`` and ``Tensor.var`` with a correction past
the reduced size N, and a fractional correction, none of them the form the definitions were written from
(forms34's ``var_small_group``), four of six inside a deep model.  Each asserts the origin, the cause's class
by mechanism (``lowering``: the exporter divides by N - correction where torch divides by
max(0, N - correction), or reads the correction as an int), ``verified``, and that ``repair``'s file passes
``check``; the same modules where N > correction, the fractional correction by the exporter that keeps it,
and a layer-norm with the unbiased variance over a size-1 dim (N == correction: the file's 0/0 is torch's)
stay clean.  One runs in ``make test``, the rest behind the ``drifts`` marker (``make test-drifts``)."""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

RETRACE = {"retrace": "make_fx_core_aten"}
_DIVIDES = "as Mul(ReduceMean(d^2), N) / (N - correction)"
# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
VERIFIED = {
    # an MVN layer's std over windows of 3, correction 4 (microsoft/onnxruntime#1086's layer)
    ("mvn_window", "torchscript"): ("lowering", "reexport", RETRACE, "aten.std.correction " + _DIVIDES),
    ("mvn_window", "dynamo"): ("lowering", "reexport", RETRACE, "aten.std.correction " + _DIVIDES),
    # var_mean over two dims (8 elements), correction 9
    ("whiten_var_mean", "dynamo"): ("lowering", "reexport", RETRACE, "aten.var_mean.correction " + _DIVIDES),
    # std_mean over a batch of 6, correction 8
    ("batch_std_mean", "torchscript"): ("lowering", "reexport", RETRACE, "aten.std_mean.correction " + _DIVIDES),
    # Tensor.var over dims (0, 1) (24 elements), correction 30
    ("tensor_var_dims", "dynamo"): ("lowering", "reexport", RETRACE, "aten.var.correction " + _DIVIDES),
}
# correction 0.5: the TorchScript exporter reads it as 0 (its ReduceMean is the variance, never rescaled); the
# dynamo exporter keeps it, so the re-export with the other exporter, tried first, verifies
OTHER_EXPORTER = {
    ("fractional_dof", "torchscript"): ("lowering", "reexport", {"exporter": "dynamo"},
                                        "ReduceMean /body/ReduceMean_1 computes something else than torch"),
}
CLEAN = [("mvn_window_plain", "torchscript"), ("whiten_var_mean_plain", "dynamo"),
         ("batch_std_mean_plain", "torchscript"), ("tensor_var_dims_plain", "dynamo"), ("fractional_dof", "dynamo"),
         ("ln_unbiased_single", "torchscript"), ("ln_unbiased_single", "dynamo")]
FAST = {("batch_std_mean", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms_dof")


@pytest.mark.parametrize("form", params({**VERIFIED, **OTHER_EXPORTER}, FAST))
def test_a_held_out_degrees_of_freedom_reduction_is_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, {**VERIFIED, **OTHER_EXPORTER}[form], "body")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_the_fix_names_torchs_divisor_and_the_source_change(explained, form):
    head = explained(*form)[4].findings[0]
    assert "max(0, N - correction)" in head.fix and "pytorch/pytorch#109186" in head.fix, head.fix
    assert "drifttui.core.model.dof_forms" in head.fix and "reference_table()" in head.fix, head.fix


@pytest.mark.drifts
@pytest.mark.parametrize("form", CLEAN, ids=[f"{m}-{e}" for m, e in CLEAN])
def test_the_same_reductions_within_their_degrees_of_freedom_stay_clean(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_held_out_forms_sit_inside_deep_models(explained):
    forms = [*VERIFIED, *OTHER_EXPORTER]
    assert len(deep_forms(explained, forms)) * 2 >= len(forms)


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_whole_module_reexport_points_at_the_nodes_that_compute(explained, form):
    """A verified re-export names no one node: the finding points at the origin's first computing
    nodes, never at the Constants its cut begins with (both exporters name nodes by their op)."""
    head = explained(*form)[4].findings[0]
    assert head.onnx_nodes and not any("Constant" in n for n in head.onnx_nodes), head.onnx_nodes
