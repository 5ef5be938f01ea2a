"""Held-out batch 46Y for issue 30 (tests/causes/forms46y.py): a blind first run (measurement only: no engine change)
on forms nobody here has tuned on, screened in SPEECH-RECOGNITION ENCODERS AND FRONT-ENDS (Conformer convolution
modules, relative positional attention, wav2vec2 / HuBERT feature encoders, Whisper log-mel in the model, CTC heads,
SpecAugment; transformers ``Wav2Vec2Model`` / ``HubertModel`` / ``Wav2Vec2ForCTC`` / ``Wav2Vec2ConformerModel`` /
``WhisperEncoder`` with seeded tiny configs; float32, autocast float16 and ``.half()``; forms46y's docstring lists
the ~90 exports screened).  The exporters compute what torch computes for nearly all of it (float16 within
drifttui's budget); what drifts past the tolerance is a normalisation of values carrying a large common offset (a
waveform's DC through wav2vec2's ``GroupNorm(C, C)``; a Conformer depthwise conv whose bias the eval BatchNorm's
running mean tracks), where torch's own float32 is the inaccurate side, and a SpecAugment drawing masks in eval.
What a right answer is (written before the first run's causes were read; /tmp/h46Y/judge.md): for the offset
norms the origin (``body.gn`` / ``body.bn``), class ``stability`` by the float64 counterfactual, verified, and
``repair`` saying it has nothing to apply; for the SpecAugment no origin blamed on the export, the determinism
note naming ``body`` and the finding naming ``torch.rand`` with no patch; the controls without an error.

First run, engine at the branch base (69841c32, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h46Y/firstrun.sh, 3 samples, 5 for a repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| feature_norm torchscript (deep) | right (``body.gn``) | yes: ``stability`` (float64 counterfactual) | yes (group_norm) | yes (float64) | n/a (nothing to repair, said) | 34 s / 19 s |
| feature_norm dynamo (deep) | right (``body.gn``) | yes: ``stability`` | yes | yes (float64) | n/a (said) | 36 s / 24 s |
| conformer_bn_offset torchscript (deep) | right (``body.bn``) | **no**: ``versions`` ("changed after its export") | **no** (names ``Identity``) | said, by the wrong story (body.bn re-exported alone: 0.0119 -> 0.00389, torch's own float32 error) | n/a (no file; the fix given, re-export, writes the same file) | 19 s / 17 s |
| conformer_bn_offset dynamo (deep) | right (``body.bn``) | **no**: ``versions`` | yes (batch_norm) | said, by the wrong story | n/a (no file) | 25 s / 14 s |
| specaug_eval torchscript (deep) | right (none blamed; the note names ``body``) | yes (the random-ops story, ``custom-module``) | yes (torch.rand) | n/a (no patch exists, said) | n/a (none written) | 19 s / 19 s |
| specaug_eval dynamo (deep) | right | yes | yes | n/a | n/a | 24 s / 12 s |
| controls feature_norm_centred dy, feature_norm_layer ts, specaug_guarded ts, conformer_conv dy | ok (4/4) | | | | | 18-26 s |

First run: origin 6/6; class by mechanism 4/6; told 5/6; verified by the right counterfactual 2/4 (the float64
one; no graph patch can exist for any kept pair; the BatchNorm pairs were "verified" by body.bn's lone re-export); repair: no file where none can pass, 6/6 (the BatchNorm
pairs for the wrong reason: "a re-export that cannot be grafted"); controls 4/4.  No engine change (measurement
only): the BatchNorm pairs are strict xfails.

A model whose BatchNorm is left in ``train()`` (a Conformer after fine-tuning) was screened and dropped before its
run counted: drifttui loads every model in ``eval()`` (``model/loading.py``) by design, so it compares the eval
model and said ``ok`` (right by that design).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_not_repairable, deep_forms, explained_forms, missed,
                                     params)

# an offset normalisation: torch's own float32 is off its float64 value, ONNX Runtime rounds otherwise; both agree
# in float64 (propose/numerics/conditioning.py): verified, nothing to repair
_COND = ("stability", "float64", {}, "ill-conditioned function in float32")
CONDITIONED = {("feature_norm", "torchscript"): ("body.gn", _COND), ("feature_norm", "dynamo"): ("body.gn", _COND),
               ("conformer_bn_offset", "torchscript"): ("body.bn", _COND),
               ("conformer_bn_offset", "dynamo"): ("body.bn", _COND)}
# first-run misses (measurement only: no engine change in this batch): both exporters fold the eval BatchNorm into
# the depthwise Conv before it (the file has no BatchNormalization: an Identity / the Conv's folded weights), which
# cancels the offset exactly; body.bn re-exported alone cannot fold, computes torch's batch_norm, and the edited-file
# story (propose/reexport/edited.py) says the file "was changed after its export": class versions, not stability
BN_FOLDED = [("conformer_bn_offset", "torchscript"), ("conformer_bn_offset", "dynamo")]
_FOLDED_WHY = ("first run: told `versions` (\"changed after its export\") from body.bn's lone re-export; since "
               "edited.whole_export_is_the_file, told as the exporter's fold (`lowering`), the unfolded re-export "
               "verifying just under the tolerance before the float64 counterfactual is tried (torch's own float32 "
               "batch_norm holds the tolerance there)")
RANDOM = [("specaug_eval", "torchscript"), ("specaug_eval", "dynamo")]
CLEAN = [("feature_norm_centred", "dynamo"), ("feature_norm_layer", "torchscript"),
         ("specaug_guarded", "torchscript"), ("conformer_conv", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms46y", inputs=dict.fromkeys(
        ["feature_norm", "feature_norm_centred", "feature_norm_layer", "specaug_eval", "specaug_guarded",
         "conformer_conv", "conformer_bn_offset"], "seq_inputs"), seed=7)


@pytest.mark.parametrize("form", [*params([f for f in CONDITIONED if f not in BN_FOLDED], set()),
                                  *missed(BN_FOLDED, _FOLDED_WHY)])
def test_an_offset_normalisation_in_a_speech_front_end_is_stability_verified_in_float64(explained, form):
    origin, (cls, op, _, words) = CONDITIONED[form]
    assert_verified_not_repairable(explained, form, (cls, op, {"module": origin}, words), origin)


@pytest.mark.parametrize("form", params(BN_FOLDED, set()))
def test_a_folded_batchnorm_is_not_said_to_be_an_edit_of_the_file(explained, form):
    """after the first run (edited.whole_export_is_the_file): the whole model exported by the file's own exporter
    computes what the file computes, so the file was not changed after its export; the story says the exporter folded
    body.bn into its neighbours (the class stays the xfail above's open question: stability by the float64
    counterfactual)."""
    _, _, _, result, exp = explained(*form)
    assert result.drift_origin.module == "body.bn"
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check != "versions" and "changed after its export" not in head.message, head.message
    assert "the file is what its own exporter" in head.message and "folded into their nodes" in head.message


@pytest.mark.parametrize("form", params(RANDOM, set()))
def test_a_specaugment_drawing_masks_in_eval_blames_no_origin_and_names_torch_rand(explained, form):
    from drifttui.core.capture.determinism import PREFIX

    _, _, _, result, exp = explained(*form)
    assert result.drift_origin is None and result.notes[0].startswith(PREFIX), result.notes
    assert "body" in result.notes[0], result.notes[0]
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.verified is False and "torch.rand" in head.message and "no patch exists" in head.message, head.message


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*CONDITIONED, *RANDOM]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
