"""Held-out batch 45R for issue 30 (tests/causes/forms45r.py): a blind first run on forms nobody here has tuned on,
screened in EMBEDDING, RETRIEVAL AND METRIC-LEARNING HEADS EXPORTED INSIDE THE MODEL (ArcFace / CosFace / SphereFace
margins, CLIP logit scales, GeM pooling, attention pooling, whitening, product-quantisation codes, binary hashing,
squared-distance expansions, top-k retrieval; transformers CLIP / BERT / MPNet towers; float16 and autocast
variants; forms45r's docstring lists the ~180 exports screened).  In float32 the exporters compute what torch
computes for all of it; what drifts past the tolerance is ONNX Runtime's dropped float16 rounding where an
embedding head cancels (ArcFace's ``sqrt(1 - cos^2)`` of a near-1 cosine, ``|a|^2 + |b|^2 - 2 a.b`` of un-centred
embeddings), and a tie order a duplicated gallery creates in a retrieval ``topk``.  What a right answer is (written
before the first run's causes were read; /tmp/h45R/judge.md): the origin ``body``; for the float16 heads, class
``dtype`` naming the float16 rounding ONNX Runtime drops, verified, and a repair that passes ``check``; for the
ties, class ``op-compat`` naming the tied values and that no patch exists; the controls without an error.

First run, engine at the branch base (23bf634b, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h45R/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| margin_pair torchscript (deep) | right | yes: ``dtype`` (cos_m 0.877583 held as float16 0.877441, and the dropped rounding) | yes (``mul``) | yes (``opmath_scalar`` + ``opmath_float32``) | yes | 28 s / 26 s |
| margin_pair dynamo (deep) | right | yes | yes (``mul``) | yes | yes | 30 s / 27 s |
| amp_sqdist torchscript (deep) | **within budget** (judge: drift; 7.3e-3 of the scale, body's worst-case float16 bound 8.7e-3) | | | | | 12 s / 4 s |
| amp_sqdist dynamo (deep) | **within budget** (7.1e-3; bound 1.0e-2) | | | | | 10 s / 5 s |
| half_sqdist torchscript (shallow) | right | yes: ``dtype`` dropped float16 rounding | **no**: "in torch's linear" (the chain's first float16 op, not the expansion where it cancels) | yes (``opmath_float32``) | yes | 11 s / 10 s |
| half_sqdist dynamo (shallow) | right | yes | **no** (``linear``) | yes | yes | 13 s / 12 s |
| gallery_topk torchscript (shallow) | right | yes: ``op-compat`` ties | yes (``topk``) | n/a (no patch exists, said) | n/a (none written, said) | 19 s / 18 s |
| gallery_topk dynamo (shallow) | right | yes | yes | n/a | n/a | 18 s / 17 s |
| controls margin_pair_f32 ts, amp_sqdist_f32 dy, half_sqdist_centred ts, gallery_topk_unique dy, amp_clip ts + dy | ok / within budget (6/6) | | | | | 8-12 s |

First run: origin 6/8, class by mechanism 6/8, told 4/8, verified and repair passing check 4/6 where a patch can
exist (``amp_sqdist`` held within budget), the ties said unrepairable 2/2; controls 6/6.

No engine change in this batch (see the session report): ``amp_sqdist`` is a strict xfail with the judge's reading
(the engine's worst-case float16 bound, which follows the expansion's cancellation, holds ORT's more accurate
float32 chain within it: torch's own float16 result is 8.9e-3 off float32 there); the ``linear`` opening of
``half_sqdist``'s message is the residual forms44o left (the story names the chain's first float16 op).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_ties_unrepairable, assert_verified_and_repaired, deep_forms,
                                     explained_forms, missed, params)

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("half_sqdist", "torchscript"): _ROUNDING, ("half_sqdist", "dynamo"): _ROUNDING}
# the margin's cos_m held in float16 and the dropped rounding: a composition the head finding verifies together
MARGIN = [("margin_pair", "torchscript"), ("margin_pair", "dynamo")]
TIES = [("gallery_topk", "torchscript"), ("gallery_topk", "dynamo")]
BUDGET = [("amp_sqdist", "torchscript"), ("amp_sqdist", "dynamo")]
CLEAN = [("margin_pair_f32", "torchscript"), ("amp_sqdist_f32", "dynamo"), ("half_sqdist_centred", "torchscript"),
         ("gallery_topk_unique", "dynamo"), ("amp_clip", "torchscript"), ("amp_clip", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms45r", seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, {("half_sqdist", "torchscript")}))
def test_a_float16_distance_expansion_whose_rounding_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(MARGIN, set()))
def test_a_float16_arcface_margin_is_repaired_with_its_scalar_and_its_rounding(explained, form):
    """ArcFace's ``cos * cos(m) - sin * sin(m)`` in float16: the exporters hold cos(0.5) as the float16 0.877441
    (torch multiplies by the Python scalar in float32 and rounds once), and ONNX Runtime drops the float16 rounding
    of the chain; ``sqrt(1 - cos^2)`` of a near-1 cosine amplifies both.  Verified together; the file checks ok."""
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    assert (head.check, head.verified, head.severity) == ("dtype", True, "error"), (head.check, head.message)
    # the scalar's story: residual.py's composition ("float16 constant") or 45S's stacked patch ("in the tensor's
    # low type"), whichever verifies first; either opens with the scalar's mul
    assert head.message.startswith("in torch's mul") and ("float16 constant" in head.message
                                                          or "in the tensor's low type" in head.message), head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


@pytest.mark.parametrize("form", params(TIES, set()))
def test_a_tie_order_a_duplicated_gallery_creates_is_named_and_said_unrepairable(explained, form):
    assert_ties_unrepairable(explained, form)


@pytest.mark.parametrize("form", missed(BUDGET, "an autocast squared-distance expansion 7e-3 of the scale off "
                                                "(ONNX Runtime drops the float16 rounding) is held within body's "
                                                "worst-case float16 bound; the judge called it a drift"))
def test_an_autocast_distance_expansion_off_by_its_dropped_rounding_is_a_drift(explained, form):
    _, _, _, result, _ = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"


@pytest.mark.parametrize("form", params(CLEAN, {("margin_pair_f32", "torchscript")}))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *MARGIN, *TIES, *BUDGET]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep


@pytest.mark.drifts
def test_zero_inputs_that_keep_a_float16_drift_do_not_rule_out_rounding(explained):
    """the cancellation at the embeddings' level (a bias the weights make) drifts on zero inputs too: step 2 must not
    say "rather than rounding" of a float16 file (batch 45R's half_sqdist, noticed outside its angle)"""
    from drifttui.python_api import diagnose

    _, cfg, _, _, _ = explained("half_sqdist", "torchscript")
    step = next(s for s in diagnose(cfg.model, cfg.onnx, cfg.inputs, step=2, samples=3, seed=7).steps if s.step == 2)
    assert step.verdict == "fail", step.summary
    assert "rather than rounding" not in step.suggestion and "float16 file, the rounding" in step.suggestion
