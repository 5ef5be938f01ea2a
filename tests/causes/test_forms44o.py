"""Held-out batch 44O for issue 30 (tests/causes/forms44o.py): a blind first run on forms nobody here has tuned on,
screened in IMAGE PRE- AND POST-PROCESSING BAKED INTO THE EXPORTED MODEL (uint8 in, ``/ 255``, mean/std, BGR, HSV,
YCbCr, Lab, Gaussian / Sobel / box filters and unsharp masks built in forward, tone mapping, letterboxing,
``pixel_shuffle`` upscaling, palette and mask outputs, denormalisation back to uint8, and their float16 variants;
forms44o's docstring lists the ~70 exports screened).  In float32 every one of them computes what torch computes
with both exporters; what drifts is the float16 variant where ONNX Runtime's CPU reads a float16 value unrounded on
one path (a node it has no float16 kernel for, run in float32 through Casts it inserts, the rounding pair between two
such nodes dropped: microsoft/onnxruntime#8787) and rounded on another, and an equality test of a channel against
``amax`` / ``max`` then fails: the hue of an HSV conversion jumps by 5/6, a dominant-channel mask flips.  What a
right answer is (written before the first run's causes were read; /tmp/h44O/judge.md): the origin the module that
reads the value; class ``dtype`` naming the float16 rounding ONNX Runtime drops; verified; a repair that passes
``check``; the controls (float32, or within drifttui's float16 budget) without an error.

First run, engine at the branch base (19efddfe; ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h44O/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| hsv_half torchscript (deep) | right | yes: ``dtype`` dropped float16 rounding | **no**: "in torch's sub", not the ``to`` / ``amax`` / ``eq`` where it acts | yes | yes | 16 s / 12 s |
| hsv_split torchscript (deep) | **none**: "no module could be named", 4 layers unattributed | **no** ("float32 noise amplified at a precision cast") | no | **no** | **no file** | 13 s / 2 s |
| dominant_split dynamo (deep) | **none**: unattributed | **no** | no | **no** | **no file** | 13 s / 3 s |
| hsv_image torchscript (shallow) | **none**: unattributed | **no** | no | **no** | **no file** | 5 s / 3 s |
| dominant_image dynamo (shallow) | **none**: unattributed | **no** | no | **no** | **no file** | 5 s / 2 s |
| sharpen_half torchscript (shallow) | right | yes: ``dtype`` (the 0.8 scalar held in float16, and the dropped rounding) | yes (``mul``) | yes | **no**: the repaired file still drifts, unattributed (the root's ``/ 255`` read unrounded by the child) | 19 s / 18 s |
| sharpen_half dynamo (shallow) | **within budget** (judge: drift; a one-unit uint8 flip, 3.9e-3 of 255) | | | | | 7 s / 4 s |
| hsv_half / hsv_image / hsv_split dynamo, superres_half ts + dy, dominant_split / dominant_image ts | within the float16 budget or ok (the judge's allowed answer, 7/7) | | | | | 4-21 s |
| controls hsv_f32 ts + dy, hsv_image_f32 dy, sharpen_f32 ts, superres_f32 dy, dominant_image_f32 dy | ok (6/6) | | | | | 4-11 s |

First run, on the 7 pairs the judge called drifts: origin 2/7, class by mechanism 2/7, told 1/7 (sharpen's
``mul`` of 0.8), verified 2/7, repair passing check 1/7; controls and within-budget pairs 13/13.

Fixed generically: ``runtime/unrounded.py`` asks ONNX Runtime's own graph (saved at ``ORT_DISABLE_ALL``: its
InsertCastTransformer runs at every level) which nodes read a float16 value's float32 twin made by the value's
producer, not by a Cast of the value: those read it unrounded.  ``prepare/local.py`` keeps such an edge between two
module calls wired in the own-error graph (a feed handed the reader torch's rounded value: both calls' own nodes
agreed, the file did not), and ``locate/case.py`` puts the producer in the origin's case, so the opmath patch that
puts the rounding back verifies on it and ``repair`` writes it (``test_unrounded_reads.py``).  After (the CLI, seed
7, /tmp/h44O/run2 and run3; this suite): origin 6/7 (``body.hsv``, ``body.dominant``, ``body`` x4), class 6/7
(``dtype``, ``opmath_float32``; sharpen a composition with ``opmath_scalar``), verified 6/7, repair passing check 6/7
(the repaired files ok on 5 samples); controls 13/13; diagnose / repair 4-21 s / 2-16 s.  Left: told stays 1/7 (the
findings open "in torch's sub" / "input" or name no torch op: the story names the first differing FX node, not the
``to`` / ``amax`` / ``eq`` where the rounding matters), and ``sharpen_half`` dynamo's one-unit uint8 flip is held
within the float16 budget (a strict xfail: the judge called it a drift; 3.92e-3 of 255, the budget's 4 eps).

Session 48 (``prepare/precision.py``, batch 48B): a float16 initializer the size of none of the model's tensors is a
value the exporter folded from the forward, not a converter's weight; the dynamo files of ``hsv_half`` and
``sharpen_half`` are held to the float32 rule like their TorchScript twins: ``sharpen_half`` dynamo is the drift the
judge called (origin ``body``), ``hsv_half`` dynamo a verified dropped rounding (9.8e-4 at ``body``), repaired.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
_INPUTS = {"hsv_image": "image_inputs", "hsv_image_f32": "image_inputs", "sharpen_half": "image_inputs",
           "sharpen_f32": "image_inputs", "dominant_image": "image_inputs", "dominant_image_f32": "image_inputs"}
# (model, exporter) -> (the head finding a right answer gives: class, patch op, what it changed, words; the origin)
REPAIRED = {("hsv_half", "torchscript"): (_ROUNDING, "body"), ("hsv_split", "torchscript"): (_ROUNDING, "body.hsv"),
            ("dominant_split", "dynamo"): (_ROUNDING, "body.dominant"),
            ("hsv_image", "torchscript"): (_ROUNDING, "body"), ("dominant_image", "dynamo"): (_ROUNDING, "body"),
            # since session 48 (prepare/precision.py, batch 48B): the dynamo file's float16 initializer is a value
            # the exporter folded from the forward, not a converter's weight, so the file is held to the float32
            # rule like its TorchScript twin, and the dropped rounding (9.8e-4 at body) is a verified drift
            ("hsv_half", "dynamo"): (_ROUNDING, "body")}
SCALAR = [("sharpen_half", "torchscript")]
BUDGET = [("sharpen_half", "dynamo")]
CLEAN = [("superres_half", "torchscript"), ("dominant_image", "torchscript"),
         ("hsv_f32", "dynamo"), ("hsv_image_f32", "dynamo"), ("sharpen_f32", "torchscript")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms44o", inputs=_INPUTS)


@pytest.mark.parametrize("form", params(REPAIRED, {("hsv_image", "torchscript")}))
def test_a_float16_value_onnx_runtime_reads_unrounded_is_put_back(explained, form):
    expected, origin = REPAIRED[form]
    assert_verified_and_repaired(explained, form, expected, origin)


@pytest.mark.parametrize("form", params(SCALAR, set()))
def test_a_sharpening_model_whose_scalar_and_input_rounding_differ_is_repaired(explained, form):
    """two mechanisms: ``0.8 * (x - blur)`` with 0.8 held in float16, and the root's ``/ 255`` read unrounded by
    the child's Pad / Conv: the head finding verifies both patches together, and the repaired file checks ok."""
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    assert (head.check, head.verified, head.severity) == ("dtype", True, "error"), (head.check, head.message)
    assert "drops the float16 rounding" in head.message, head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


@pytest.mark.parametrize("form", params(BUDGET, set()))     # held to the float32 rule since session 48, as judged
def test_a_one_unit_flip_of_a_float16_uint8_output_is_a_drift(explained, form):
    _, _, _, result, _ = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"


@pytest.mark.parametrize("form", params(CLEAN, {("hsv_f32", "dynamo")}))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *SCALAR]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
