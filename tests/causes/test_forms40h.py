"""Held-out batch H for issue 30 (tests/causes/forms40h.py): a blind first run in three of the private set's six
families (arithmetic, cumulative functions, integer conversions), written from upstream threads after grepping every
earlier suite, screened with torch 2.13 / ONNX Runtime 1.32 (forms40h's docstring lists what was screened and
matched, or drifts in a form the suites hold).  What a right answer is, by mechanism (written before the first run's
causes were read; /tmp/heldH/judge.md of session 31):

* ``channel_quant_shallow`` (integer conversion): ``fake_quantize_per_channel_affine`` of an activation on a half-step
  grid: torch rounds ``x * (1 / scale)``, QuantizeLinear ``x / scale``; at a tie they round apart, one step:
  ``lowering`` of the fake-quantize call, verified by QuantizeLinear computed as torch quantises, repairable;
* ``half_logcumsumexp`` (cumulative): a float16 ``logcumsumexp`` lowered to six float16 nodes, which ONNX Runtime's
  CPU runs through float32 (microsoft/onnxruntime#8787) while torch rounds the input and the result: ``dtype``,
  verified by computing the nodes in float32 rounded where torch rounds, repairable;
* ``top_p_mass`` (cumulative), ``half_reciprocal`` (arithmetic): the same dropped float16 rounding: ``dtype``;
* ``fisher_z`` / ``fisher_z_shallow`` (arithmetic): ``atanh`` of a cosine near 1, ill-conditioned in float32 on both
  sides: ``stability`` by the float64 counterfactual; no file computes torch's float32 rounding (nothing to repair);
* ``phase_wrap`` (arithmetic; judged after the first run of an earlier version, see forms40h): ``remainder`` of a
  large quotient, lowered as ``a - Floor(a / b) * b`` (the formula torch dropped in pytorch/pytorch#38293):
  ``stability``, the stable form ``fmod`` with the sign moved, repairable.

First run, engine as on main at 7f7a26d (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldH/firstrun.sh, 3 samples, never tuned on these forms):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| channel_quant_shallow torchscript | right | yes: ``lowering`` (``fake_quantize_per_channel_affine``) | **no** (6 patches) | **no file**: "no keep-in-float32 list brings the file within its int8 budget" | 7 s / 6 s |
| channel_quant_shallow dynamo | right | yes: ``lowering`` | **no** (5 patches) | **no**: repair exits 2, the keep-list's check copy misses the ``.onnx.data`` | 11 s / 6 s |
| half_logcumsumexp dynamo (deep) | right | **no**: ``op-compat`` (the fallback: the reference evaluator cannot run the CumSum) | **no** (10 patches) | **no file** | 32 s / 16 s |
| top_p_mass torchscript (deep) | right | yes: ``dtype`` (per-op float32 with rounding) | yes | yes | 6 s / 4 s |
| top_p_mass dynamo (deep) | right | yes: ``dtype`` | yes | yes | 6 s / 6 s |
| half_reciprocal torchscript (deep) | right | yes: ``dtype`` | yes | yes | 5 s / 3 s |
| half_reciprocal dynamo (deep) | right | yes: ``dtype`` | yes | yes | 5 s / 6 s |
| fisher_z dynamo (deep) | right | yes: ``stability`` (float64 counterfactual) | yes | not repairable: right | 9 s / 7 s |
| fisher_z_shallow dynamo | right | yes: ``stability`` | yes | not repairable: right | 8 s / 7 s |
| phase_wrap torchscript (deep) | right | yes: ``stability`` (the origin in float64), but its story is wrong: "ONNX Runtime's float32 kernels round its intermediates ... no node and no lowering is wrong on its own" | yes | yes (the origin in float64) | 15 s / 14 s |
| phase_wrap dynamo (deep) | right | yes, the same story | yes | yes | 14 s / 12 s |
| controls: float_logcumsumexp dynamo, top_p_float torchscript, phase_small torchscript | ok, no error finding | | | | 5-7 s |

First run: origin 11/11; class by mechanism and verified 8/11 (not channel_quant x2, half_logcumsumexp); repair
passing ``check`` 6/9 of the pairs a file can fix (not channel_quant x2, half_logcumsumexp; the two fisher_z pairs are
torch's own rounding, where the right answer writes no file); controls 3/3 clean.  8 of the 11 pairs sit in deep
models (17+ module calls).

Why each miss (what decided it):
* ``channel_quant_shallow``: no proposer has a patch for a QuantizeLinear (its lowering is the only one either
  exporter writes, fake_quantize has no decomposition to re-lower through, and the float64 counterfactual keeps
  the tie); ``fx_localise`` names the call right.  ``repair`` then takes the int8 route (``pipeline.repair``: over
  budget -> ``keep_list_search`` -> ``_reduce_range``) and stops there, and for the dynamo file the keep-list's copy
  was built from ``prepared.proto``, whose initializers point at the external ``.data`` file the check's temp dir
  does not have (exit 2);
* ``half_logcumsumexp``: ``propose/numerics/opmath.py`` tried its two forms, every node rounded (``per_op``) and the nodes
  after a reduction's input unrounded (``grouped``: the CumSum's, but its Exp is upstream and still rounded, and the
  small ``exp(x - max)`` terms lose their digits in float16); torch computes the whole op in float32.  With nothing
  verified, the class came from the localiser's fallback (the reference evaluator fails on CumSum's axis).
* ``phase_wrap`` (counted right): ``propose/numerics/origin64.py`` verifies because the origin computed in float64 makes the
  unstable formula exact enough, and words it as ONNX Runtime's kernels' rounding amplified; the cause is the
  lowering's formula.

After the first run (session 31, four generic changes):
* ``propose/numerics/opmath.py``: a third form, ``whole``: every float16 node in float32, rounded only at the model's own
  conversions (its Casts to float16) and at the set's boundary: one torch op lowered to several nodes whatever the
  order of its reduction (``half_logcumsumexp``: ``dtype``, verified, repaired);
* ``onnx/edit/lowerings/remainder.py`` + ``propose/edits/singular.py``: a remainder ``a - Floor(a / b) * b`` rewritten as torch's
  ``fmod`` with the sign moved (``stability``; tried before the float64 origin, so ``phase_wrap``'s head now names
  the formula);
* ``onnx/edit/lowerings/quantize_torch.py`` + ``propose/edits/quantize_torch.py``: a QuantizeLinear computed as torch quantises,
  ``Round(x * Reciprocal(scale))``, proposed only where the case's values differ from torch's quantisation
  (``channel_quant_shallow``: ``lowering``, verified);
* ``pipeline.repair``: an int8 file over budget that no keep-list or reduce_range copy fixes is repaired by the
  origin's verified patch; the keep-list and reduce_range copies carry the external data.
So: class by mechanism and verified 11/11; repair passing ``check`` 9/9; controls 3/3 clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, assert_verified_not_repairable,
                                     deep_forms, explained_forms, params)

_HALF = ("dtype", "rewrite", {"rewrite": "opmath_float32", "form": "per_op"}, "float16")
_WHOLE = ("dtype", "rewrite", {"rewrite": "opmath_float32", "form": "whole"}, "rounds only its result")
_F64 = ("stability", "float64", {}, "ill-conditioned")
_REMAINDER = ("stability", "rewrite", {"rewrite": "fmod_remainder"}, "fmod")
_QUANT = ("lowering", "rewrite", {"rewrite": "quantize_reciprocal"}, "1 / scale")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("top_p_mass", "torchscript"): _HALF, ("top_p_mass", "dynamo"): _HALF,
            ("half_reciprocal", "torchscript"): _HALF, ("half_reciprocal", "dynamo"): _HALF}
TORCH_ROUNDING = {("fisher_z", "dynamo"): _F64, ("fisher_z_shallow", "dynamo"): _F64}
# the first run's misses (and phase_wrap's wrong story), with the right answer: each fixed since by a generic change
FIXED = {("half_logcumsumexp", "dynamo"): _WHOLE, ("phase_wrap", "torchscript"): _REMAINDER,
         ("phase_wrap", "dynamo"): _REMAINDER, ("channel_quant_shallow", "torchscript"): _QUANT,
         ("channel_quant_shallow", "dynamo"): _QUANT}
CLEAN = [("float_logcumsumexp", "dynamo"), ("top_p_float", "torchscript"), ("phase_small", "torchscript")]
FAST = {("half_reciprocal", "torchscript"), ("channel_quant_shallow", "torchscript"), ("phase_small", "torchscript")}
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40h")


@pytest.mark.parametrize("form", params(REPAIRED, FAST))
def test_a_dropped_float16_rounding_is_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)


@pytest.mark.parametrize("form", params(TORCH_ROUNDING, FAST))
def test_an_ill_conditioned_atanh_is_told_as_torchs_own_rounding(explained, form):
    assert_verified_not_repairable(explained, form, TORCH_ROUNDING[form], ORIGIN)


@pytest.mark.parametrize("form", params(FIXED, FAST))
def test_the_first_runs_misses_are_verified_and_repaired(explained, form):
    """A float16 op lowered to several nodes (``whole``), a remainder's unstable formula (``fmod_remainder``, tried
    before the float64 origin), a QuantizeLinear that divides where torch multiplies by the reciprocal."""
    assert_verified_and_repaired(explained, form, FIXED[form], ORIGIN)


@pytest.mark.parametrize("form", params([("channel_quant_shallow", "torchscript"),
                                         ("channel_quant_shallow", "dynamo")], FAST))
def test_an_int8_file_no_keep_list_fixes_is_repaired_by_its_verified_patch(explained, form):
    """``drifttui repair`` of this int8 file: the origin's verified patch repairs it (before: "no keep-in-float32 list
    ..., no file written"; for the dynamo file the keep-list's check copy lost the external ``.onnx.data``: exit 2).
    When batch H wrote this test the file was over its int8 budget and ``pipeline.repair`` reached the patch after the
    keep-list and reduce_range copies failed; since ``core/prepare/qat.py`` its quantizers are the model's own fake
    quantisation, it has no budget and is a plain DRIFT, so the patch is the repair directly."""
    engine, _, run, _, _ = explained(*form)
    done = engine.repair(run.result)
    assert done.kind == "patches" and done.after is not None and done.after.verdict == "ok", (done.kind, done.reason)


@pytest.mark.parametrize("form", params(CLEAN, FAST))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TORCH_ROUNDING, *FIXED]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
