"""Held-out batch 47A for issue 30 (tests/causes/forms47a.py): a blind first run on forms nobody here has tuned on,
screened in DOCUMENT AI AND OCR MODELS (CRNN + greedy CTC heads, LayoutLM / LayoutLMv3 2-D box position embeddings
with coordinate scaling, truncation and clamping, DB binarisation, EAST rotated boxes, table-structure heads,
transformers ``LayoutLMModel`` / ``LayoutLMv3Model`` / ``TrOCRForCausalLM`` / ``DonutSwinModel`` /
``VisionEncoderDecoderModel`` with tiny seeded configs; forms47a's docstring lists the 32 models screened).  In
float32 the exporters compute what torch computes for all of it; what drifts past drifttui's tolerance is ONNX
Runtime's dropped float16 rounding where a box head under autocast makes coordinates ``sigmoid * 1000`` that are
truncated to embedding indices (one index off is a different embedding row).  What a right answer is (written
before the first run's causes were read; /tmp/h47a/judge.md): the origin ``body``; class ``dtype`` naming the
float16 rounding ONNX Runtime drops, verified, a repair that passes ``check``; the controls without an error.  The
judge expected the message to name ``sigmoid`` or ``mul``; the engine names ``linear``, and its leave-one-out in the
file itself (decisive_rounding.necessary) shows why: ONNX Runtime runs the float16 ``Mul`` natively (rounded) and
drops only the rounding of the Gemm's output that the Sigmoid reads; leaving that one rounding out brings the drift
back, leaving out the Sigmoid's or the Mul's does not.  Counted right by mechanism (and noted).  The screen's DB
binarisation (1.5e-3 of the scale) and EAST boxes (6.1e-4) under autocast sit inside drifttui's float16 budget (4
eps, 3.9e-3): the judge, written on the screen's max |d| / scale, had them as drifts; they are within-budget controls.

First run, engine untouched at the branch base (739059c1, ``drifttui diagnose`` / ``repair`` / ``check --seed 7``
through /tmp/h47a/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| box_embed torchscript (deep) | right | yes: ``dtype`` (``opmath_float32`` per_op) | yes (``linear``; judge: sigmoid/mul) | yes | yes | 52 s / 46 s |
| box_embed dynamo (deep) | right | yes | yes (``linear``) | yes | yes | 65 s / 46 s |
| layoutlmv3_boxes torchscript (deep) | **no origin** (OVER BUDGET, unattributed) | **no** | **no** | **no** | **no file** | 44 s / 39 s |
| layoutlmv3_boxes dynamo (deep) | **no origin** (OVER BUDGET, unattributed) | **no** | **no** | **no** | **no file** | 67 s / 47 s |
| layoutlm_boxes torchscript (deep) | **no origin** (OVER BUDGET, unattributed) | **no** | **no** | **no** | **no file** | 129 s / 93 s |
| layoutlm_boxes dynamo (deep) | **no origin** (OVER BUDGET, unattributed) | **no** | **no** | **no** | **no file** | 163 s / 107 s |
| controls box_embed_f32 ts, layoutlmv3_f32 dy, layoutlm_f32 dy, db_binarize_f32 dy, rbox_f32 ts, table_amp ts + dy, db_binarize ts + dy, rbox ts + dy | ok (11/11) | | | | | 35-171 s |

First run: origin 2/6; class by mechanism 2/6; told 2/6 (by the judge's letter, sigmoid / mul: 0/6); verified and
repair passing check 2/6 (a patch can exist for all six); controls 11/11 (four of them are the judge's own misjudged
"drifts", db_binarize and rbox, within the float16 budget).  No engine change in this batch (measurement only).

Why the four LayoutLM pairs have no origin (/tmp/h47a/run1/*.diag.json): ONNX Runtime's dropped rounding is seen
(``runtime/unrounded.py`` reports the Sigmoid's read of the box Gemm, the edge stays wired) and ``body``'s own error
is measured: 1.0 (one coordinate one unit off) on the int64 ``bbox`` it hands the transformers model, 1.7e-3 of that
value's scale (its largest coordinate, about 580).  ``body``'s own rule is its float16 budget, 5.5e-3 (the
worst-case bound for its float16 nodes), applied to every value it owns, the integer ``bbox`` too: it passes.  The
embedding Gathers, fed torch's ``bbox``, agree; so every failing layer is "unattributed" (a lookup by integers
computed from floats).  In ``box_embed`` the same head's own error fails only because one of its owned index values
(a box height) has a smaller scale (a box height, at most 88 here: 1 / 88 > 5.5e-3, measured by torch on the stem's
output): the same mechanism, right by luck of scale.  What is lacking: an integer value a call makes from its
float16 values is not float16 (its one-unit step is no rounding of the budget's kind, and a lookup turns it into a
whole row); whether a flip is a drift or legitimate float16 noise needs the opmath counterfactual, which decide
never reaches without an origin.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

_LINEAR = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "in torch's linear")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("box_embed", "torchscript"): _LINEAR, ("box_embed", "dynamo"): _LINEAR,
            ("layoutlmv3_boxes", "torchscript"): _LINEAR, ("layoutlmv3_boxes", "dynamo"): _LINEAR,
            ("layoutlm_boxes", "torchscript"): _LINEAR, ("layoutlm_boxes", "dynamo"): _LINEAR}
# first run: OVER BUDGET with no origin; the layers that fail are LayoutLM's position-embedding Gathers (own error 0)
# and every caller up to the root, each "unattributed": body's own nodes, fed torch's rounded box-head output, agree.
# Session 48 (forms48e): the integers a call makes are judged at rtol (decide/rules.py), which names body in three of
# the four; layoutlmv3_boxes torchscript still fails the test (not examined in that session)
MISSED_ORIGIN = [("layoutlmv3_boxes", "torchscript")]
CLEAN = [("box_embed_f32", "torchscript"), ("layoutlmv3_f32", "dynamo"), ("layoutlm_f32", "dynamo"),
         ("db_binarize_f32", "dynamo"), ("rbox_f32", "torchscript"), ("table_amp", "torchscript"),
         ("table_amp", "dynamo"), ("db_binarize", "torchscript"), ("db_binarize", "dynamo"),
         ("rbox", "torchscript"), ("rbox", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms47a", seed=7)


@pytest.mark.parametrize("form", [*params([f for f in REPAIRED if f not in MISSED_ORIGIN], set()),
                                  *missed(MISSED_ORIGIN, "no origin: body's one-unit error on the int64 bbox it hands "
                                          "the transformers model (1.7e-3 of ~580) is judged at its float16 "
                                          "budget (5.5e-3) and passes; the Gathers fed torch's bbox agree")])
def test_a_float16_box_head_whose_rounding_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
