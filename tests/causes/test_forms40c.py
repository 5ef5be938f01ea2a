"""Held-out batch C for issue 30 point 8 (tests/causes/forms40c.py): convolution and pooling variants, shuffles,
einsum, cumulative max / min, vector norms and transformers blocks, screened with torch 2.13 / ONNX Runtime 1.32
and both exporters.  None of them drifts any more (forms40c's docstring lists what was screened and the upstream
threads), so this batch holds no drifting pair: only held-out clean controls inside deep CNNs, run once with the
engine as it stood on main (first run: no error finding, ``check`` ok), asserted here so they stay clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, deep_forms, explained_forms, params

CLEAN = [("ceil_maxpool", "torchscript"), ("ceil_maxpool", "dynamo"),
         ("circular_same", "torchscript"), ("circular_same", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    inputs = {m: "image_inputs" for m, _ in CLEAN}
    return explained_forms(tmp_path_factory, "forms40c", inputs=inputs)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_the_clean_controls_sit_inside_deep_models(explained):
    assert deep_forms(explained, CLEAN) == CLEAN
