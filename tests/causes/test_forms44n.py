"""Held-out batch 44N for issue 30 (tests/causes/forms44n.py): a blind first run on forms nobody here has tuned on,
screened in TEXT-TO-SPEECH AND VOCODER CODE IN PLAIN TORCH (VITS duration paths and ``generate_path``, FastSpeech2
pitch buckets, Snake, HiFi-GAN upsampling, rational-quadratic splines, coupling flows, mu-law, RVC's coarse pitch;
forms44n's docstring lists the ~26 models screened with both exporters).  The exporters compute what torch computes
for the TTS code itself in float32; what drifts is float16 code a deployer writes: ONNX Runtime's CPU runs the
float16 elementwise chain through float32 Casts it inserts and drops the roundings torch makes, and a quantiser
right after (mu-law's ``.long()``, RVC's ``round``) turns that into whole-bin flips.  What a right answer is (written
before the first run's causes were read; /tmp/h44N/judge.md): the origin ``body``; class ``dtype`` naming the float16
rounding ONNX Runtime drops, verified, and a repair that passes ``check``; the controls without an error.

First run, engine at the branch base (19efddfe, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h44N/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| coarse_half torchscript (deep) | right | yes: ``dtype`` (ORT's dropped float16 rounding) | yes | yes | yes | 7 s / 10 s |
| coarse_half dynamo (deep) | right | yes | yes | yes | yes | 16 s / 17 s |
| coarse_amp torchscript (shallow) | right | yes | **no** (ONNX nodes only) | yes | yes (seed 7; seed 0: no) | 9 s / 9 s |
| coarse_amp dynamo (shallow) | right | yes | yes | yes | yes (seed 7; seed 0: no) | 10 s / 9 s |
| mulaw_half torchscript (deep) | right | **no**: ``lowering`` | no | **no** | **no file** | 15 s / 13 s |
| mulaw_half dynamo (deep) | right | yes: ``dtype`` | yes | yes (on the case) | **no**: check drifts at body | 12 s / 12 s |
| mulaw_amp torchscript (shallow) | **none** (unattributed) | no | no | no | **no file** | 7 s / 3 s |
| mulaw_amp dynamo (shallow) | **none** | no | no | no | **no file** | 7 s / 4 s |
| controls coarse_f32 ts, mulaw_amp_off dy, spline ts + dy, coupling dy, hifi ts | ok (6/6) | | | | | 5-18 s |

First run: origin 6/8; class by mechanism 6/8; told 5/8; verified 5/8 (mulaw_half dynamo's on the case only);
repair passing check 4/8 at seed 7 (2/8 at the suite's seed 0: coarse_amp's repaired file is OVER BUDGET with no
origin there, the stem's float32 noise flipping the autocast cast's float16 rounding before ``round``); controls 6/6.

No engine fix kept: leaving the values inside one FX call unrounded in ``propose/numerics/opmath.py``'s ``per_op``
form (dynamo's ``log1p`` is Add then Log, torch rounds only the result) made the patched file compute eager torch's
mu-law (with the scalar held in float32: 0 bin flips over 33 samples, measured by hand), but it also made ``per_op``
verify first on a single composite op (test_opmath.py's float16 ``logcumsumexp``), telling ONNX Runtime's dropped
rounding where the file's lowering is the mechanism; reverted.
Left: (1) mulaw_amp: the body's own error is measured at the mu-law integers (one bin off of 255 is 0.4% of the
value's scale, within a float16 budget) so no module owns the drift; (2) mulaw_half TorchScript: the file lowers
``log1p`` to Add then Log with no record of the one torch op, so per-op rounding rounds ``1 + x`` and flips bins;
(3) mulaw_half dynamo: torch holds ``/ math.log1p(255)`` in float32, the file in float16, and the origin's case
(the values drifttui's hooked forward records) agrees with the float16 number, not with eager torch, so a patch
computing what eager torch computes does not verify on it.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (_head_verified, assert_clean, assert_verified_and_repaired, deep_forms,
                                     explained_forms, missed, params)

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("coarse_half", "torchscript"): _ROUNDING, ("coarse_half", "dynamo"): _ROUNDING}
# verified and a file written, but on the suite's samples (seed 0) the repaired file still flips bins: the stem's
# float32 noise flips the autocast cast's float16 rounding of the Linear's input, and ``round`` makes it a whole bin
WRITTEN = {("coarse_amp", "torchscript"): _ROUNDING, ("coarse_amp", "dynamo"): _ROUNDING}
MISSED = {("mulaw_half", "torchscript"): _ROUNDING, ("mulaw_half", "dynamo"): _ROUNDING,
          ("mulaw_amp", "torchscript"): _ROUNDING, ("mulaw_amp", "dynamo"): _ROUNDING}
CLEAN = [("coarse_f32", "torchscript"), ("mulaw_amp_off", "dynamo"), ("spline", "torchscript"),
         ("spline", "dynamo"), ("coupling", "dynamo"), ("hifi", "torchscript")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms44n")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_quantised_float16_pitch_whose_rounding_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(WRITTEN, set()))
def test_a_quantised_autocast_pitch_is_verified_and_a_file_written(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    _, _, run, exp = _head_verified(explained, form, WRITTEN[form], "body")
    assert repair(full_model(run.prepared.index), exp).model is not None


@pytest.mark.parametrize("form", missed(MISSED, "mu-law of a float16 waveform: the case holds torch's float16 "
                                                "scalar, TorchScript's log1p is two rounded nodes, the integers' "
                                                "own error is judged on a float16 budget (test_forms44n docstring)"))
def test_a_mu_law_of_a_float16_waveform_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, MISSED[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *WRITTEN, *MISSED]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
