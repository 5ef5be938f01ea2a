"""Held-out batch D for issue 30 point 8 (tests/causes/forms40d.py): special math and type promotion.  About 220
form/exporter pairs screened with torch 2.13 / ONNX Runtime 1.32 (forms40d's docstring lists them, with the
upstream threads): most special functions do not export (TorchScript) or match (dynamo); integer, bool, int64
and float64 arithmetic match.  What drifts: **a ``dtype=`` argument applied to the result instead of the input**
(``log_softmax`` / ``softmin`` / ``mean`` with ``dtype=torch.float32`` of a float16 tensor: the file computes the
op in float16 and casts its result; microsoft/onnxruntime#20057, pytorch/pytorch#153393).

First run, with the engine as it stood on main (c0a0559: ``drifttui diagnose`` / ``repair`` / ``check``), never
tuned on:

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| half_logprobs dynamo (deep) | right (``body``) | yes: ``lowering`` of ``aten.log_softmax.int`` (the wrong node named is the Cast; the fix also names ``aten.linear``) | yes (core-ATen re-export) | yes | 14 s / 12 s |
| half_logprobs torchscript (deep) | right | partly: ``lowering``, no torch op named ("Cast /body/Cast_1 computes something else") | yes (dynamo core-ATen re-export) | yes | 18 s / 16 s |
| pool_mean_dtype dynamo (deep) | right | yes: ``lowering`` of ``aten.mean.dim`` | yes (TorchScript re-export) | yes | 11 s / 8 s |
| softmin_gate torchscript | right | ``lowering`` of ``softmin``, unverified | no (9 patches) | no file | 17 s / 12 s |
| softmin_gate dynamo | right | ``lowering`` of ``softmin``, unverified | no (9 patches) | no file | 16 s / 12 s |
| controls: pool_mean_dtype torchscript, half_logprobs_cast dynamo, float_logprobs torchscript | ok, no error finding | | | | 7-11 s |

What was missing: a patch that moves the widening Cast before the op (no exporter lowers ``softmin(dtype=)`` right,
and no decomposition reaches it).  ``propose/cast_first.py`` (edit ``onnx/edit/cast_first.py``): at each Cast of the
origin that widens a float value made by a computing node, that node computed in the Cast's type; then the same with
the narrow nodes feeding only it up to an explicit Cast (ONNX Runtime computes float16 nodes in float32 and drops the
rounding of an inserted Cast a Cast back reads, so widening the op alone loses the ``x.half()`` rounding torch
keeps).  Class ``dtype``, repaired by a graph edit.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, deep_forms, explained_forms, params

INPUTS = {"pool_mean_dtype": "image_inputs"}
# (model, exporter) -> the origin
DRIFTS = {("half_logprobs", "dynamo"): "body", ("half_logprobs", "torchscript"): "body",
          ("pool_mean_dtype", "dynamo"): "body", ("softmin_gate", "torchscript"): "body",
          ("softmin_gate", "dynamo"): "body"}
NO_EXPORT_ROUTE = [("softmin_gate", "torchscript"), ("softmin_gate", "dynamo")]   # only the cast-first edit verifies
CLEAN = [("pool_mean_dtype", "torchscript"), ("half_logprobs_cast", "dynamo"), ("float_logprobs", "torchscript")]
FAST = {("softmin_gate", "dynamo")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40d", inputs=INPUTS)


@pytest.mark.parametrize("form", params(DRIFTS, FAST))
def test_a_dtype_applied_after_the_op_has_its_origin_verified_and_repaired(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == DRIFTS[form]
    head = exp.findings[0]
    assert head.check in ("dtype", "lowering") and (head.verified, head.severity) == (True, "error"), \
        (head.check, head.message)
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


@pytest.mark.parametrize("form", params(NO_EXPORT_ROUTE, FAST))
def test_softmin_with_dtype_is_told_as_the_cast_placed_after_the_op(explained, form):
    """No re-export lowers ``softmin(dtype=)`` right: the cast-first edit is what verifies, class ``dtype``, the
    story naming the op computed in float16 and the Cast after it, ``repair`` applying the edit."""
    head = explained(*form)[4].findings[0]
    assert (head.check, head.verified) == ("dtype", True), (head.check, head.message)
    assert head.patch["rewrite"] == "cast_first" and head.patch["to"] == 1 and head.patch["narrow"] == 10, head.patch
    assert "computes in float16" in head.message and "Softmax" in head.message, head.message
    assert "before the call" in head.fix, head.fix


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(DRIFTS))
    assert len(deep) * 2 >= len(DRIFTS), deep
