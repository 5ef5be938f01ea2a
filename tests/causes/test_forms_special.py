"""Held-out forms for the stable forms and definitions of the make_fx re-trace route (tests/causes/
forms_special.py; issue 30 point 2, session 24): special functions the dynamo exporter lowers unstably and a
GNN's scatter mean, none of them the forms the definitions were written from (forms33's erfc_log, erfcx,
log_ndtr, scatter_mean), three of four inside a deep model.  Each asserts the origin, the cause's class by
mechanism (``stability`` for an unstable lowering of the same function, ``lowering`` for another function),
``verified``, and that ``repair``'s file passes ``check``; the same functions at small arguments, and the
scatter reduction the exporter lowers right, stay clean.  One runs in ``make test``, the rest behind the
``drifts`` marker (``make test-drifts``)."""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

RETRACE = {"retrace": "make_fx_core_aten"}
# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
VERIFIED = {
    # a message-passing layer's mean aggregation (pytorch/pytorch#147617; onnx/onnx#5100)
    ("gnn_mean", "dynamo"): ("lowering", "reexport", RETRACE, "ScatterElements(reduction='none')"),
    # log(0.5 erfc(z / sqrt 2)) by hand: torch.erfc lowered as 1 - Erf (microsoft/onnxscript#822)
    ("normal_logsf", "dynamo"): ("stability", "reexport", RETRACE, "aten.erfc.default as 1 - Erf(x)"),
    # 1 / erfcx(z): Exp(z^2) (1 - Erf(z)) (microsoft/onnxscript#1223)
    ("mills_ratio", "dynamo"): ("stability", "reexport", RETRACE, "aten.special_erfcx.default as Exp(x^2)"),
    # erfc(z + 0.5) / erfc(z): 0 / 0
    ("erfc_ratio", "dynamo"): ("stability", "reexport", RETRACE, "1 - Erf(x)"),
}
CLEAN = [("gnn_amax", "dynamo"), ("normal_logsf_small", "dynamo"), ("mills_ratio_small", "dynamo"),
         ("erfc_ratio_small", "dynamo")]
FAST = {("erfc_ratio", "dynamo")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms_special")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_held_out_unstable_or_missing_lowering_is_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], "body")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_the_fix_names_the_source_change_and_the_upstream_thread(explained, form):
    head = explained(*form)[4].findings[0]
    assert "make_fx(model, decomposition_table=drifttui.core.model.retrace.reference_table())" in head.fix
    assert any(ref in head.fix for ref in ("onnxscript#822", "onnxscript#1223", "onnx/onnx#5100")), head.fix


@pytest.mark.drifts
@pytest.mark.parametrize("form", CLEAN, ids=[f"{m}-{e}" for m, e in CLEAN])
def test_the_same_functions_at_small_arguments_stay_clean(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_held_out_forms_sit_inside_deep_models(explained):
    assert len(deep_forms(explained, list(VERIFIED))) * 2 >= len(VERIFIED)
