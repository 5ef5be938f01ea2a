"""Held-out batch 45P for issue 30 (tests/causes/forms45p.py): a blind first run on forms nobody here has tuned on,
screened in OPTICAL-FLOW, STEREO AND GEOMETRIC-WARPING CODE WRITTEN IN PLAIN TORCH INSIDE THE MODEL (RAFT / PWC
correlation volumes and lookups, coarse-to-fine pyramids, ``grid_sample`` warps from flow fields normalised to
[-1, 1], ``meshgrid`` / ``arange`` coordinate grids, soft-argmin and winner-take-all disparities, ``affine_grid`` and
homography warps, ``pixel_shuffle``, RAFT's convex upsampling, and their float16 variants; forms45p's docstring lists
the ~60 forms screened).  In float32 every one computes what torch computes with both exporters; what drifts is the
float16 variant, where ONNX Runtime's CPU runs the coordinate chain through float32 Casts it inserts and drops the
roundings between them (microsoft/onnxruntime#8787): a sample point moves by part of a float16 ulp at pixel 60, a
winner-take-all ``argmax`` flips between near-equal costs.  What a right answer is (written before the first run's
causes were read; /tmp/h45P/judge.md): the origin ``body``; class ``dtype`` naming the float16 rounding ONNX Runtime
drops; the message naming an op of the chain (not the ``linear`` feeding it); verified; a repair that passes
``check``; the controls (float32, or within drifttui's float16 budget) without an error.

First run, engine at the branch base (23bf634b; ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h45P/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| flow_warp torchscript (deep) | right | yes: ``dtype`` dropped float16 rounding | **no**: "in torch's linear" | yes | yes | 10 s / 7 s |
| flow_warp dynamo (deep) | right | yes | **no**: "linear" | yes | yes | 15 s / 12 s |
| wta torchscript (deep) | right | yes | yes (``sum``) | yes | yes | 18 s / 15 s |
| wta dynamo (deep) | right | yes | **no**: "stack" | yes | yes | 19 s / 15 s |
| gather_warp torchscript (shallow) | right | yes | **no**: "linear" | yes | yes | 11 s / 12 s |
| gather_warp dynamo (shallow) | right | yes | **no**: "linear" | yes | yes | 15 s / 10 s |
| affine torchscript (deep) | right | **no** by the judge (``precision``; judge: ``dtype``) | no | **no** | **no file** | 17 s / 6 s |
| affine dynamo (deep) | **within budget** (judge: drift) | | | | | 11 s / 6 s |
| controls flow_warp_f32 ts, wta_f32 dy, affine_f32 ts, gather_warp_f32 dy, convex ts (ok); lookup dy, flow_warp_amp ts (within the float16 budget) | ok (7/7) | | | | | 8-23 s |

First run, by the judge as written: origin 7/8, class 6/8, told 1/8, verified 6/8, repair passing check 6/8;
controls 7/7.  The judge was wrong on ``affine``: measured after the run (/tmp/h45P/emu2.py), torch's own float16
``grid_sample`` is the imprecise side (2.1e-3 from a float32 sample of the same grid, ONNX Runtime's 2e-4 at the
model's output against torch's 5.2e-4): "the precision this layer is stored in, not a mistranslation" and "within
budget" are right answers there, no patch exists; re-judged: origin 8/8, class 8/8, verified / repaired 6/6.

Fixed generically: ``propose/numerics/decisive_rounding.py`` (when no single rounding of a verified per_op opmath
patch removes the drift alone, each is left out of the set in turn and the one whose omission brings back the most
of the drift is marked decisive, so the story names its op: ``test_necessary_rounding.py``).  After (the CLI, seed
7, /tmp/h45P/run2): origin, class, verified and repair passing check as before (6/6 dropped-rounding pairs; affine
ts ``precision``, no file); told 4/6 by the judge's words: flow_warp dynamo ``mul`` and wta torchscript ``mul``
(the rounding measured to matter most); flow_warp / gather_warp torchscript open "in torch's add" for a decisive
``Mul`` / ``Gemm`` node (the value alignment's ancestor walk gives those nodes to the first found call after them:
right by name, not by node).  Left: wta dynamo names ``stack`` (no single rounding left out brings the flip back;
a strict xfail); gather_warp dynamo names ``linear`` at seed 7 (measured: leaving out the flow linear's output
rounding brings back as much as the ``mul`` after it; at this suite's samples it names an op of the chain);
controls 7/7.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed, \
    params

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("flow_warp", "torchscript"): _ROUNDING, ("flow_warp", "dynamo"): _ROUNDING,
            ("wta", "torchscript"): _ROUNDING, ("wta", "dynamo"): _ROUNDING,
            ("gather_warp", "torchscript"): _ROUNDING, ("gather_warp", "dynamo"): _ROUNDING}
# the op each story names once the rounding that matters is marked (dynamo: from the file's FX records)
TOLD = {("flow_warp", "dynamo"): "torch's mul", ("wta", "torchscript"): "torch's mul"}
UNTOLD = [("wta", "dynamo")]
# torch's own float16 grid_sample is the imprecise side: a precision story, no patch
PRECISION = [("affine", "torchscript")]
CLEAN = [("affine", "dynamo"), ("flow_warp_f32", "torchscript"), ("wta_f32", "dynamo"),
         ("affine_f32", "torchscript"), ("gather_warp_f32", "dynamo"), ("convex", "torchscript"),
         ("lookup", "dynamo"), ("flow_warp_amp", "torchscript")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms45p")


@pytest.mark.parametrize("form", params(REPAIRED, {("gather_warp", "torchscript")}))
def test_a_float16_warp_whose_roundings_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


def _head(explained, form):
    _, _, _, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    return next(f for f in exp.findings if f.severity == "error")


@pytest.mark.parametrize("form", params(TOLD, set()))
def test_the_story_names_the_op_whose_rounding_matters(explained, form):
    head = _head(explained, form)
    assert head.message.startswith(f"in {TOLD[form]} "), head.message


@pytest.mark.parametrize("form", missed(UNTOLD, "no rounding left out of the verified set alone brings the argmax flip "
                                                "back: the story names the stack"))
def test_the_story_names_an_op_of_the_cost_or_coordinate_chain(explained, form):
    head = _head(explained, form)
    assert head.message.startswith(("in torch's mul ", "in torch's sum ", "in torch's add ", "in torch's sub ",
                                    "in torch's floor ")), head.message


@pytest.mark.parametrize("form", params(PRECISION, set()))
def test_a_float16_affine_warp_torch_computes_less_precisely_is_a_precision_story(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model

    _, _, run, result, exp = explained(*form)
    head = _head(explained, form)
    assert (head.check, head.verified) == ("precision", None), (head.check, head.message)
    assert repair_patches(full_model(run.prepared.index), run.result, exp)[0].model is None


@pytest.mark.parametrize("form", params(CLEAN, {("wta_f32", "dynamo")}))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *PRECISION]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
