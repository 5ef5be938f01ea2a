"""Held-out batch 46Z for issue 30 (tests/causes/forms46z.py): a blind first run on forms nobody here has tuned on,
screened in TIME-SERIES FORECASTING AND TABULAR MODELS IN PLAIN TORCH AND TRANSFORMERS MODEL CLASSES (RevIN,
PatchTST patching by ``unfold``, N-BEATS trend / seasonality bases, TFT variable selection, quantile heads, DLinear
moving-average decomposition with replicate padding, FT-Transformer numeric and periodic embeddings, mean-abs target
scaling, ``PatchTSTForPrediction`` / ``PatchTSMixerForPrediction``; forms46z's docstring lists the 51 models
screened).  What a right answer is (written before the first run's causes were read; /tmp/h46Z/judge.md): the origin
``body``; for a float16 series at a level that normalisation / decomposition cancels, or a float16 feature that
learned frequencies amplify, class ``dtype`` naming the float16 rounding ONNX Runtime drops and a torch op (add /
linear), verified, a repair that passes ``check``; for RevIN over a flat series in float32, class ``stability``
naming torch's ``mean`` (its mean of identical values is an ulp off, the file's exact), no patch; the controls
without an error.

First run, engine untouched at the branch base (69841c32, ``drifttui diagnose`` / ``repair`` / ``check --seed 7``
through /tmp/h46Z/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| revin_half torchscript (deep) | right | yes: ``dtype`` (``opmath_float32`` per_op) | yes (``add``) | yes | yes | 17 s / 17 s |
| revin_half dynamo (deep) | right | yes | yes (``add``) | yes | yes | 19 s / 10 s |
| dlinear_amp torchscript (deep) | right | yes: ``dtype`` | yes (``linear``) | yes | yes | 11 s / 17 s |
| dlinear_amp dynamo (deep) | right | yes | yes (``linear``) | yes | yes | 22 s / 20 s |
| flat_revin torchscript (deep) | right | yes: ``stability`` (float64 counterfactual, torch's own rounding) | **no** (``sub``) | n/a (no patch exists, said) | n/a (none written, said) | 13 s / 10 s |
| flat_revin dynamo (deep) | right | yes | **no** (``sub``) | n/a | n/a | 17 s / 32 s |
| periodic_amp torchscript (shallow) | **no origin** (OVER BUDGET, ``body`` unattributed) | **no** | **no** | **no** | **no file** | 16 s / 9 s |
| periodic_amp dynamo (shallow) | right | yes: ``dtype`` | yes (``linear``) | yes | yes | 27 s / 32 s |
| controls revin_half_flat0 ts, dlinear_f32 dy, revin_noflat ts, periodic_f32 dy, tft_amp ts + dy | ok (6/6) | | | | | 10-40 s |

First run: origin 7/8; class by mechanism 7/8; told 5/8; verified and repair passing check 5/6 where a patch can
exist, the flat series said unrepairable 2/2; controls 6/6.  (``dlinear_amp``'s decisive rounding is the ``+ 300``'s,
ulp 0.25, not the Linear's; the judge accepted either.)  No engine change in this batch (measurement only): the
misses are strict xfails below.

After, by the lead (``runtime/unrounded._removed_widenings``): ONNX Runtime removes ``body``'s widening Cast of the
Linear's float16 output with the Cast back it inserts after the float32-run Gemm, so ``body`` reads the unrounded
value; that Cast is now an unrounded read, the edge stays wired in the own-error graph, and ``periodic_amp``
TorchScript is named at ``body``, verified and repaired: origin 8/8, class 8/8, told 6/8, verified and repair 6/6.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

_ADD = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "in torch's add")
_LINEAR = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "in torch's linear")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("revin_half", "torchscript"): _ADD, ("revin_half", "dynamo"): _ADD,
            ("dlinear_amp", "torchscript"): _LINEAR, ("dlinear_amp", "dynamo"): _LINEAR,
            ("periodic_amp", "dynamo"): _LINEAR, ("periodic_amp", "torchscript"): _LINEAR}
# first run: the TorchScript file maps the autocast Linear as its own call (body.lin), and ONNX Runtime removes body's
# widening Cast of its float16 output with the Cast back it inserts after the float32-run Gemm: body reads the Gemm's
# unrounded value.  The own-error graph fed body torch's rounded value (its own nodes agreed) and decide called the
# amplified error 'unattributed': no origin.  Since runtime/unrounded._removed_widenings the removed Cast is an
# unrounded read, the edge stays wired, body is the origin, verified and repaired.
MISSED_ORIGIN: list = []
# torch's mean of a flat series at 1000 is an ulp off (the file's exact); float32 rounding no file reproduces
FLAT = [("flat_revin", "torchscript"), ("flat_revin", "dynamo")]
CLEAN = [("revin_half_flat0", "torchscript"), ("dlinear_f32", "dynamo"), ("revin_noflat", "torchscript"),
         ("periodic_f32", "dynamo"), ("tft_amp", "torchscript"), ("tft_amp", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms46z", seed=7)


@pytest.mark.parametrize("form", [*params([f for f in REPAIRED if f not in MISSED_ORIGIN], set()),
                                  *missed(MISSED_ORIGIN, "no origin: a float16 child within 4 eps amplified by its "
                                          "parent's own nodes is called unattributed noise (decide/unattributed.py)")])
def test_a_float16_series_or_feature_whose_rounding_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


def _flat_head(explained, form):
    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    return run, exp, next(f for f in exp.findings if f.severity == "error")


@pytest.mark.parametrize("form", params(FLAT, set()))
def test_revin_over_a_flat_series_is_torchs_own_rounding_without_a_patch(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model

    run, exp, head = _flat_head(explained, form)
    assert head.check == "stability" and "torch's own float32 result" in head.message, (head.check, head.message)
    assert "nothing to apply" in head.fix, head.fix
    assert repair_patches(full_model(run.prepared.index), run.result, exp)[0].model is None


@pytest.mark.parametrize("form", params(FLAT, set()))
def test_revin_over_a_flat_series_names_torchs_mean(explained, form):
    _, _, head = _flat_head(explained, form)
    assert "in torch's mean" in head.message, head.message


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *FLAT]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
