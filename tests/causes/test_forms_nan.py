"""Held-out forms of one family (tests/causes/forms_nan.py): ONNX Runtime's selection kernels skip NaN where
torch propagates it.  None of them was used to build the mechanism (propose/edits/nan_select.py was built on
forms33's ``argmax_nan`` and ``maxpool_nan``); on its first run it verified and repaired 10 of these 12,
and missed ``max_dim_nan`` with both exporters (``torch.max(x, dim)``: a ReduceMax and an ArgMax both fed
the NaN, so neither rewrite alone removes the drift), which the joint rewrite of every NaN-fed selection
node of the origin now covers.  Each form: the origin, the class by mechanism (``op-compat``: it is the
runtime's semantics), ``verified``, and ``repair``'s file passes ``check``; the same deep models on values
without NaN have no error finding.  Two fast forms run in ``make test``; the rest behind ``drifts``.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

NAN = {"rewrite": "nan_propagate"}
# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
VERIFIED = {
    ("amax_nan", "torchscript"): ("op-compat", "rewrite", NAN, "ReduceMax /body/ReduceMax is fed NaN"),
    ("amax_nan", "dynamo"): ("op-compat", "rewrite", NAN, "torch's amax propagates it"),
    ("max_dim_nan", "torchscript"): ("op-compat", "rewrite", {**NAN, "nodes": ["/body/ReduceMax", "/body/ArgMax"]},
                                     "2 selection nodes"),
    ("max_dim_nan", "dynamo"): ("op-compat", "rewrite", NAN, "2 selection nodes"),
    ("min_idx_nan", "torchscript"): ("op-compat", "rewrite", {**NAN, "node": "/body/ArgMin"}, "first NaN's index"),
    ("min_idx_nan", "dynamo"): ("op-compat", "rewrite", NAN, "first NaN's index"),
    ("masked_amax", "torchscript"): ("op-compat", "rewrite", NAN, "ReduceMax"),
    ("masked_amax", "dynamo"): ("op-compat", "rewrite", NAN, "amax"),
    ("adaptive_pool_nan", "torchscript"): ("op-compat", "rewrite", {**NAN, "node": "/body/MaxPool"}, "MaxPool"),
    ("adaptive_pool_nan", "dynamo"): ("op-compat", "rewrite", NAN, "NaN for every window"),
    ("cnn_pool_nan", "torchscript"): ("op-compat", "rewrite", NAN, "MaxPool"),
    ("cnn_pool_nan", "dynamo"): ("op-compat", "rewrite", NAN, "max_pool2d propagates it"),
}
ORIGIN = {"cnn_pool_nan": "body.pool"}      # the MaxPool2d child is a module call of its own
CLEAN = [(m, e) for m in ("amax_plain", "max_dim_plain", "adaptive_pool_plain", "cnn_pool_plain")
         for e in ("torchscript", "dynamo")]
FAST = {("amax_nan", "torchscript"), ("min_idx_nan", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms_nan")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_held_out_nan_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], ORIGIN.get(form[0], "body"))
    head = explained(*form)[4].findings[0]
    assert head.kind == "runtime" and "nan_to_num" in head.fix and "onnxruntime#10514" in head.fix, head.fix


@pytest.mark.parametrize("form", params(CLEAN, {("amax_plain", "torchscript")}))
def test_the_same_models_without_nan_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_held_out_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(VERIFIED))
    assert len(deep) * 2 >= len(VERIFIED), deep
