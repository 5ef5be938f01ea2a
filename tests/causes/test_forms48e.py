"""Held-out batch 48E for issue 30 (tests/causes/forms48e.py): a blind first run on forms nobody here has tuned on,
screened in NEURAL AUDIO CODECS AND WAVEFORM MODELS (residual vector quantisation by the nearest code, DAC's
factorised l2-normalised lookups, Snake, A-law / mu-law companding, FSQ and tanh scalar quantisers, EnCodec's
weight-normed padded convs, overlap-add; forms48e's docstring lists the ~140 exports screened).  In float32 the
exporters compute what torch computes; what drifts past the tolerance with both exporters is ONNX Runtime's dropped
float16 rounding in front of a quantiser (microsoft/onnxruntime#8787): the nearest of 1024 codes under autocast,
A-law bins of a float16 waveform.  What a right answer is (written before the first run's causes were read;
/tmp/h48e/judge.md): the origin ``body``; class ``dtype`` (the float16 rounding ONNX Runtime drops), verified by a
rounding patch, a repair that passes ``check``; the message naming the torch op whose rounding is dropped; the
controls without an error.

First run, engine at the branch base (9597206d, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h48e/firstrun.sh, 3 samples, 5 for the repaired file's check; the controls through a copy of the base tree):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| rvq_amp torchscript (shallow) | right | yes: ``dtype`` (dropped float16 rounding) | yes ("in torch's sum": the decisive rounding, ``|r|^2``) | yes (``opmath_float32`` per_op) | yes | 91 s / 83 s |
| rvq_amp dynamo (shallow) | right | yes | yes ("in torch's matmul") | yes | yes | 127 s / 68 s |
| alaw_half torchscript (deep) | right | yes: ``dtype`` ("two float16 stories": torch's Python scalars 87.6 / 5.47 held in float32, and the dropped rounding) | yes ("in torch's mul") | yes (the patches in sequence) | yes | 47 s / 43 s |
| alaw_half dynamo (deep) | right | yes | yes | yes | yes | 62 s / 50 s |
| alaw_amp torchscript (deep) | **no origin** (OVER BUDGET, every failing layer "unattributed": "upstream float32 rounding noise amplified at a precision cast") | **no** | no | **no** | **no file** | 30 s / 17 s |
| alaw_amp dynamo (deep) | **no origin** | **no** | no | **no** | **no file** | 41 s / 31 s |
| controls rvq_f32 dy, alaw_f32 ts, dac_codes ts, snake dy, sconv ts | ok (5/5) | | | | | 41-79 s |

First run: origin 4/6; class by mechanism 4/6; told 4/6; verified 4/6; repair passing check 4/6; controls 5/5.  The
two misses: ``body`` fed torch's own inputs in ONNX Runtime is 1.0 off (/tmp/h48e/mech3.py; torch's body fed ONNX
Runtime's stem is exact), but its own error is one unit on the int64 A-law bins it makes (scale 255: 0.47 %),
inside the call's float16 budget (1.46 %), so ``body`` was ``inherited`` and, with no origin, ``unattributed`` (47a's
LayoutLM miss, the same rule).

Fixed generically: ``core/base/metrics.py`` marks an integer comparison (its floor ``STEP``) and
``core/decide/rules.py`` judges the integers a call makes at rtol, not at its float16 / int8 budget (a budget covers
roundings; a bin or an index one unit off is a whole step); ``tests/engine/test_integer_steps.py``.  After (the
CLI, seed 7, /tmp/h48e/run2): ``alaw_amp`` torchscript: origin ``body``, ``dtype`` "two float16 stories", told
("in torch's mul"), verified, repaired (the repair's own check on 3 samples ok) but ``check`` on 5 samples is still
OVER BUDGET (0.075 of the output, "unattributed": on two more samples upstream float32 noise flips the float16
rounding of body.lin's input cast, which no patch of ``body`` reaches).  ``alaw_amp`` dynamo: origin ``body``, class
``precision`` (keep-in-float32 list, "not a mistranslation"), nothing verified, no file: left, a strict xfail.
Totals after: origin 6/6, class 5/6, told 5/6, verified 5/6, repair passing check 4/6 (5/6 on the repair's own 3
samples); controls 5/5 (this file's tests after the fix: 10 passed, 1 strict xfail; test_forms47a's three LayoutLM
misses now pass, test_forms44n / 47e unchanged).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms,
                                     params)


def _rounding(op: str) -> tuple:
    return ("dtype", "rewrite", {"rewrite": "opmath_float32", "form": "per_op"}, f"in torch's {op}")


# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, the torch op named)
_STORIES = ("dtype", "sequence", {}, "two float16 stories")
REPAIRED = {("rvq_amp", "torchscript"): _rounding("sum"), ("rvq_amp", "dynamo"): _rounding("matmul"),
            ("alaw_half", "torchscript"): _STORIES, ("alaw_half", "dynamo"): _STORIES,
            ("alaw_amp", "torchscript"): _STORIES, ("alaw_amp", "dynamo"): _STORIES}
# under the batch's own fix (integers at rtol) the precision story stopped the search for alaw_amp dynamo; under
# decide/integer_steps.py (kept at the merge) it is verified and repaired like the others
MISSED: list = []
CLEAN = [("rvq_f32", "dynamo"), ("alaw_f32", "torchscript"), ("dac_codes", "torchscript"), ("snake", "dynamo"),
         ("sconv", "torchscript")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms48e", seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_codec_quantiser_after_float16_ops_gets_its_dropped_rounding_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")
    head = explained(*form)[4].findings[0]
    assert "drops the float16 rounding" in head.message, head.message


@pytest.mark.parametrize("form", params(CLEAN, {("sconv", "torchscript")}))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *MISSED]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
