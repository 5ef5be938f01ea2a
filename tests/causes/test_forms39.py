"""Upstream drift forms found for issue 30 point 8 in session 28 (tests/causes/forms39.py: a float32 running sum,
integer powers past 2**53, ``Tensor.any`` of floats, a float16 variance), none of them in forms20/30/32-38,
forms_special / forms_nan / forms_dof, upstream.py, real.py, benchmarks/causes_forms.py or the catalogue; the deep
ones inside forms30's 16-call stem and a head, exported by the real exporters and run in real ONNX Runtime: the
origin, the cause's class by mechanism, ``verified``, and ``repair``'s file passes ``check``; clean controls.

FIRST_RUN_TABLE
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms,
                                     params)

_SCAN = ("stability", "rewrite", {"rewrite": "accumulate_float64"}, "torch's CPU cumsum accumulates float32 in double")
_POW = ("dtype", "rewrite", {"rewrite": "int_pow_exact"}, "through double (std::pow)")
_ANY = ("lowering", "reexport", {"exporter": "dynamo"}, "the torchscript exporter's lowering")
# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
VERIFIED = {
    ("running_mean", "torchscript"): _SCAN, ("running_mean", "dynamo"): _SCAN,
    ("suffix_sum", "torchscript"): _SCAN, ("suffix_sum", "dynamo"): _SCAN,
    ("hash_pow", "torchscript"): _POW, ("hash_pow", "dynamo"): _POW,
    ("int_pow", "torchscript"): _POW, ("int_pow", "dynamo"): _POW,
    ("any_float", "torchscript"): _ANY,
}
CLEAN = [("running_mean_short", "dynamo"), ("hash_pow_small", "torchscript"), ("any_mask", "torchscript"),
         ("any_float", "dynamo")]
FAST = {("suffix_sum", "torchscript"), ("int_pow", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms39")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_form_is_explained_by_mechanism_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(VERIFIED))
    assert len(deep) * 2 >= len(VERIFIED), deep
