"""Upstream drift forms found for issue 30 point 8 in session 27 (tests/causes/forms37.py: ONNX Runtime's
float32 reductions over many elements, a grid sampled at NaN coordinates, a loss the dynamo exporter lowers
wrong), none of them in forms20/30/32-36, forms_special/nan/dof, upstream.py, real.py or the catalogue; six of
the eleven pairs inside a deep model (forms30's 16-call stem, the form, a head), exported by the real
exporters and run in real ONNX Runtime: the origin, the cause's class by mechanism, ``verified``, and
``repair``'s file passes ``check``; three clean controls.

First run, before any engine change (session 27: see FIRST_RUN below and docs/drift-catalogue.md).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

FORMS = [("pool_level", "torchscript"), ("pool_level", "dynamo"), ("pool1d_level", "torchscript"),
         ("pool1d_level", "dynamo"), ("token_mean", "torchscript"), ("token_mean", "dynamo"),
         ("long_logsumexp", "torchscript"), ("long_logsumexp", "dynamo"), ("warp_nan", "torchscript"),
         ("warp_nan", "dynamo"), ("multilabel", "dynamo")]
CLEAN = [("pool_plain", "torchscript"), ("warp_plain", "dynamo"), ("token_mean_short", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms37")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, FORMS)
    assert len(deep) * 2 >= len(FORMS), deep
