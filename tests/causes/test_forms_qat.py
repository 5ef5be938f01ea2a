"""Quantisation-aware training (tests/causes/forms_qat.py): a QDQ file whose quantizers are the model's own fake
quantisation is held to the float32 tolerance, not to an int8 budget (``core/prepare/qat.py``).

First run (engine as on main at 6484458, before ``qat.py``; /tmp/qat/run.sh of session 31, 3 samples):
``requant_average`` (deep), both exporters: WITHIN BUDGET, ``body``'s own error 4.00e-01 (max rel 1.49e-02) under its
int8 budget 4.9e-02 of its scale, "5 of 44 (30) nodes compute in reduced precision"; ``repair``: nothing to repair.
After: DRIFT at ``body``, ``lowering`` verified by ``quantize_reciprocal`` (local error 0.4 -> 0), ``repair``'s file
``ok`` (output max |d| 0.0746 -> 0); the clean QAT controls ``ok`` at the float32 rule.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_QUANT = ("lowering", "rewrite", {"rewrite": "quantize_reciprocal"}, "1 / scale")
DRIFTS = {("requant_average", "torchscript"): _QUANT, ("requant_average", "dynamo"): _QUANT}
CLEAN = [("requant_offgrid", "torchscript"), ("requant_offgrid", "dynamo"), ("qat_linear", "torchscript")]
FAST = {("requant_average", "torchscript"), ("qat_linear", "torchscript")}
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms_qat")


@pytest.mark.parametrize("form", params(DRIFTS, FAST))
def test_a_tie_the_file_rounds_apart_from_torchs_own_fake_quantisation_is_a_drift(explained, form):
    """Torch rounds at the file's quantizers itself: no int8 budget (before: WITHIN BUDGET, body's own error 0.4 under
    an int8 budget of 4.9e-2 of its scale), so the one-step tie is a DRIFT at body, verified and repaired."""
    _, _, run, result, _ = explained(*form)
    assert result.precision is not None and result.precision.verdict == ""
    assert "the model's own fake quantisation" in result.precision.summary, result.precision.summary
    assert run.prepared.budgets == ({}, 0.0)
    assert_verified_and_repaired(explained, form, DRIFTS[form], ORIGIN)


@pytest.mark.parametrize("form", params(DRIFTS, FAST))
def test_drifttui_repair_writes_the_quantizelinear_as_torch_quantises(explained, form):
    engine, _, run, _, _ = explained(*form)
    done = engine.repair(run.result)
    assert done.kind == "patches" and done.after is not None and done.after.verdict == "ok", (done.kind, done.reason)


@pytest.mark.parametrize("form", params(CLEAN, FAST))
def test_a_qat_file_that_quantises_as_torch_does_is_clean_at_the_float32_rule(explained, form):
    _, _, run, result, _ = explained(*form)
    assert_clean(explained, form)
    assert result.precision.verdict == "" and "held to the float32 rule" in result.precision.summary
    assert run.prepared.budgets == ({}, 0.0) and len(run.prepared.precision.own) == 6


@pytest.mark.drifts
def test_the_drifts_sit_inside_deep_models(explained):
    assert deep_forms(explained, list(DRIFTS)) == list(DRIFTS)
