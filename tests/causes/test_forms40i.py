"""Held-out batch I for issue 30 (tests/causes/forms40i.py): a blind first run on forms nobody here has tuned on,
written from upstream threads after grepping every earlier suite, screened with torch 2.13 / ONNX Runtime 1.32
(forms40i's docstring lists what was screened and matched, or drifts in a form the suites hold).  Screening found
no new drift in the loss family; the batch holds attention masking, distance, arithmetic, cumulative and integer
conversion forms.  What a right answer is, by mechanism (written before the first run's causes were read;
/tmp/heldI/judge.md of session 31):

* ``float_masked_attention`` (attention masking, deep): SDPA with a float mask whose first query row is all
  ``-inf``: torch's ``_safe_softmax`` gives zeros, both files NaN: ``lowering`` of
  ``scaled_dot_product_attention``, a non-finite error, verified by a guard after the Softmax, repairable;
* ``count_cosine`` (distance, deep, TorchScript): ``cosine_similarity`` of 1e10 features, the symbolic's
  ``sqrt(|a|^2 |b|^2)`` overflows: ``lowering``, verified by the dynamo re-export (exact), repairable;
* ``inverse_sigmoid`` (arithmetic, shallow): ``logit(sigmoid(20 x), eps=1e-6)``: ONNX Runtime's Sigmoid rounds
  otherwise than torch's, the logit near 1 amplifies it: right if the story names the Sigmoid kernel (or the
  ill-conditioning), not a lowering of ``logit`` (the catalogue knows ORT's Sigmoid from real.py / forms20);
* ``window_mean`` (cumulative, deep): a detrended moving average by prefix-sum differences over 128 steps on a
  level of 300: torch's CPU ``cumsum`` accumulates float32 in double, ONNX Runtime's ``CumSum`` in float32; the
  difference minus the level cancels it up: the accumulation (``CumSum`` in float64, then Cast), repairable;
* ``bfloat_codes_shallow`` (integer conversion): ``(x * 8).bfloat16().to(torch.int8)``: ONNX Runtime collapses
  the Cast pair float -> bfloat16 -> int8 (at every optimisation level) and truncates the unrounded float, one code
  off: ``dtype`` (the dropped bfloat16 rounding), verified by the explicit rounding pair, repairable (the judge's
  first note said the Cast kernel truncates; a standalone Cast showed it rounds, so the note was corrected to the
  pair's removal after the run: either way the engine's answer below is a miss).

First run, engine as on main at 373b6b8 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldI/firstrun.sh, 3 samples, never tuned on these forms):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| float_masked_attention torchscript (deep) | right | yes: ``lowering`` (``nonfinite_guard`` after the Softmax) | yes | yes | 5 s / 4 s |
| float_masked_attention dynamo (deep) | right | yes: ``lowering`` (the guard on the SDPA's MatMul) | yes | yes | 6 s / 6 s |
| count_cosine torchscript (deep) | right | yes: ``lowering`` (body re-exported with dynamo) | yes | yes | 6 s / 5 s |
| inverse_sigmoid torchscript | right | yes: ``op-compat``, ONNX Runtime's Sigmoid kernel (``sigmoid_recip``) | yes | yes | 3 s / 3 s |
| inverse_sigmoid dynamo | right | yes, the same | yes | yes | 5 s / 4 s |
| window_mean torchscript (deep) | right | the label ``stability`` is the right one, the story is not: "each side rounds its float32 otherwise, neither mistranslates" ("torch's sub"), by the float64 origin | yes (float64) | **no file**: "no file computes torch's float32 rounding" (``CumSum`` in float64 then Cast computes torch's values exactly) | 9 s / 7 s |
| window_mean dynamo (deep) | right | the same | yes (float64) | **no file** | 7 s / 8 s |
| bfloat_codes_shallow torchscript | right | **no**: ``op-compat`` (the fallback), "ONNX Runtime could not run the origin's nodes: No corresponding Numpy type for Tensor Type. bfloat16" | **no** (10 patches) | **no file** | 7 s / 7 s |
| bfloat_codes_shallow dynamo | right | **no**, the same | **no** | **no file** | 7 s / 7 s |
| controls: count_cosine dynamo, window_mean_low torchscript | ok, no error finding | | | | 4 s, 3 s |
| control float_masked_partial dynamo | ok, but **an error finding**: "weights: initializer body.mask differs from torch body.mask by nan" | | | | 5 s |

First run: origin 9/9; class by mechanism and verified 5/9 by the story (7/9 by the label: window_mean's
``stability`` is the class the accumulation patch has too); repair passing ``check`` 5/9 (a file can fix all nine);
controls 2/3 clean (the float mask's ``-inf`` entries make a false "weights" error, also a second error finding on
both float_masked_attention pairs).  5 of the 9 pairs sit in deep models (17+ module calls).

Why each miss (what decided it):
* ``window_mean``: ``propose/numerics/accumulate64.py`` (``long_sums``) proposes the float64 accumulation only for sums of
  at least ``MIN_REDUCED = 4096`` elements per output; a ``CumSum`` over 128 steps is never proposed, and the
  float64 origin (``propose/numerics/origin64.py``) verifies and words it as torch's own rounding, ``repair`` then has only a
  counterfactual.  Generic fix: gate a sum or scan on its measured conditioning, not a fixed length (a running
  float32 sum's error bound, length x eps x the largest partial sum, against the tolerance at the origin's output,
  or simply try the float64 accumulation, one cheap patch, before the float64 origin whenever the origin holds a
  sum whose level is taken off after).
* ``bfloat_codes_shallow``: ``locate/evaluate.py`` (``localise`` -> ``run_ort``) fetches every node's value, and
  ONNX Runtime's Python binding cannot return a bfloat16 value to numpy: the localisation fails whole ("unknown"),
  the origin's local error is inf and nothing verifies; ``propose/numerics/opmath.py``'s explicit rounding pair, which
  repairs forms40f's float16 ``half_codes``, is never reached for bfloat16.  Generic fix: observe a value of a type
  numpy lacks (bfloat16, float8) through an exact widening Cast to float32 in the observation copy, and let the
  per-op rounding forms treat bfloat16 as they treat float16.
* ``float_masked_partial`` (control) and the two ``float_masked_attention`` pairs: ``explain/checks/custom_module.py``
  (``_close``: ``max |a - b|`` in float64) compares a buffer holding ``-inf`` with its initializer: ``-inf - -inf`` is
  NaN, NaN is not within the tolerance, so an identical mask "differs by nan" (an error).  Generic fix: equal
  elements (equal infinities, NaN against NaN) differ by 0 before the maximum (``propose/edits/weights.py``'s ``_differs``
  has the same subtraction).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

_GUARD = ("lowering", "rewrite", {"rewrite": "nonfinite_guard"}, "fully masked")
_DYNAMO = ("lowering", "reexport", {"exporter": "dynamo"}, "dynamo exporter")
_SIGMOID = ("op-compat", "rewrite", {"rewrite": "workaround", "form": "sigmoid_recip"}, "Sigmoid kernel")
_ACCUMULATE = ("stability", "rewrite", {"rewrite": "accumulate_float64"}, "CumSum")
_BFLOAT = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "bfloat16")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("float_masked_attention", "torchscript"): _GUARD, ("float_masked_attention", "dynamo"): _GUARD,
            ("count_cosine", "torchscript"): _DYNAMO, ("inverse_sigmoid", "torchscript"): _SIGMOID,
            ("inverse_sigmoid", "dynamo"): _SIGMOID}
# the first run's misses, with the right answer
MISSED_SCAN = {("window_mean", "torchscript"): _ACCUMULATE, ("window_mean", "dynamo"): _ACCUMULATE}
MISSED_BFLOAT = {("bfloat_codes_shallow", "torchscript"): _BFLOAT, ("bfloat_codes_shallow", "dynamo"): _BFLOAT}
CLEAN = [("count_cosine", "dynamo"), ("window_mean_low", "torchscript")]
MISSED_CLEAN = [("float_masked_partial", "dynamo")]
MASKED = [("float_masked_attention", "torchscript"), ("float_masked_attention", "dynamo")]
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40i")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_the_held_out_forms_the_first_run_got_right_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)


@pytest.mark.parametrize("form", params(MISSED_SCAN, set()))
def test_a_short_cumsum_cancelled_up_is_located_and_verified_as_stability(explained, form):
    """What the first run got right on ``window_mean``: the origin, and a verified ``stability`` head."""
    _, _, _, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == ORIGIN
    head = exp.findings[0]
    assert (head.check, head.verified, head.severity) == ("stability", True, "error"), (head.check, head.message)


# the first run's miss (accumulate64.long_sums proposed the float64 accumulation only for 4096 elements or more: a
# 128-step CumSum got the float64 origin, "neither mistranslates", and no file), fixed since by MIN_SCANNED
@pytest.mark.parametrize("form", params(MISSED_SCAN, set()))
def test_a_short_cumsum_cancelled_up_is_repaired_by_its_float64_accumulation(explained, form):
    assert_verified_and_repaired(explained, form, MISSED_SCAN[form], ORIGIN)


@pytest.mark.parametrize("form", params(MISSED_BFLOAT, set()))
def test_bfloat16_codes_are_located(explained, form):
    _, _, _, result, _ = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == ORIGIN


# the first run's miss (evaluate.localise fetched every node value and ONNX Runtime cannot return a bfloat16 value to
# numpy: the localisation failed, nothing verified), fixed since: a value of a type numpy lacks is read through an
# exact Cast to float32 (locate/evaluate.run_ort, runtime/sessions.make_session), and opmath takes its declared type
@pytest.mark.parametrize("form", params(MISSED_BFLOAT, set()))
def test_bfloat16_codes_are_told_as_the_dropped_rounding_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, MISSED_BFLOAT[form], ORIGIN)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


# the first run's miss (custom_module._close: -inf - -inf is NaN, so a mask buffer with -inf entries "differed by
# nan" from its identical initializer), fixed since by base/metrics.elementwise_gap
@pytest.mark.parametrize("form", params(MISSED_CLEAN, set()))
def test_a_clean_control_with_an_inf_mask_has_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.parametrize("form", params(MASKED, set()))
def test_an_identical_inf_mask_is_not_told_as_differing_weights(explained, form):
    exp = explained(*form)[4]
    assert [f.message for f in exp.findings if f.check == "weights"] == []


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *MISSED_SCAN, *MISSED_BFLOAT]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
