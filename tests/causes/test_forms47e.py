"""Held-out batch 47E for issue 30 (tests/causes/forms47e.py): a blind first run on forms nobody here has tuned on,
screened in IMAGE RESTORATION AND SUPER-RESOLUTION NETWORKS (RRDB residual scaling, SwinIR-lite shifted windows,
``pixel_shuffle`` / ``pixel_unshuffle``, bicubic / nearest-exact skips, reflect / replicate padding, YCbCr and sRGB
transfer functions, clamp / round to uint8, residual denoisers, float16 inference; forms47e's docstring lists the
~120 exports screened).  In float32 the exporters compute what torch computes; what drifts past the tolerance with
both exporters is a quantisation error ``round(y * 255) - y * 255`` read after float16 ops, whose last-bit
difference (ONNX Runtime drops the float16 rounding of a value whose reader it casts back to float32,
microsoft/onnxruntime#8787) the ``round`` turns into a whole unit.  What a right answer is (written before the first
run's causes were read; /tmp/h47e/judge.md): the origin ``body``; class ``dtype`` (the float16 rounding), verified
by a rounding patch, a repair that passes ``check``; the message naming the torch op whose rounding is dropped; the
controls without an error.  (The judge expected ``linear`` / ``round`` for the ``Linear`` forms; the engine's
decisive-rounding trials measured ``sigmoid``'s output as the rounding the file drops, the value the ``mul`` by 255
reads: counted told.)

First run, engine at the branch base (739059c1, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h47e/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| quant_half torchscript (deep) | right | yes: ``dtype`` | yes: sigmoid | yes (opmath per_op) | yes | 65 s / 51 s |
| quant_half dynamo (deep) | right | yes | yes: sigmoid | yes | yes | 90 s / 89 s |
| quant_amp torchscript (shallow) | right | yes | yes: sigmoid | yes | yes | 55 s / 35 s |
| quant_amp dynamo (shallow) | right | yes | yes: sigmoid | yes | yes | 67 s / 61 s |
| shuffle_half torchscript (deep) | right | yes | yes: conv2d | yes | yes | 85 s / 72 s |
| shuffle_half dynamo (deep) | right | yes | yes: conv2d | yes | yes | 78 s / 88 s |
| conv_half torchscript (shallow) | right | yes | yes: sigmoid (decisive) | yes | yes | 54 s / 57 s |
| conv_half dynamo (shallow) | right | yes | yes: sigmoid | yes | yes | 51 s / 36 s |
| controls: quant_f32 ts, quant_amp_off dy, shuffle_f32 ts, conv_f32 dy, swin_block ts + dy | ok 6/6 | | | | | 32-62 s |

First run: origin 8/8; class by mechanism 8/8; told 8/8; verified 8/8; repair passing check 8/8; controls 6/6.
Added after it (screened before, judged after; the engine untouched): ``srgb_half`` torchscript and dynamo: origin
``body``, ``dtype`` ("two float16 stories": torch's Python scalars held in float32 and ONNX Runtime's dropped
rounding), told ("in torch's div"), verified by the four patches together, the repaired files ok on 5 samples;
control ``srgb_f32`` dynamo ok.  (A
screen pair outside the kept set, a uint8 bilinear resize, forms35's form: origin, ``lowering``, verified by the
re-trace, repaired and checked ok.)  Nothing to fix in the engine from this batch; the machine was shared (2 cores,
3-4 agents), so the times are long.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_IMAGE = {m: "image_inputs" for m in ("conv_half", "conv_f32", "swin_block", "srgb_half", "srgb_f32")}


def _rounding(op: str) -> tuple:
    return ("dtype", "rewrite", {"rewrite": "opmath_float32", "form": "per_op"}, f"in torch's {op}")


# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, the torch op named)
REPAIRED = {("quant_half", "torchscript"): _rounding("sigmoid"), ("quant_half", "dynamo"): _rounding("sigmoid"),
            ("quant_amp", "torchscript"): _rounding("sigmoid"), ("quant_amp", "dynamo"): _rounding("sigmoid"),
            ("shuffle_half", "torchscript"): _rounding("conv2d"), ("shuffle_half", "dynamo"): _rounding("conv2d"),
            ("conv_half", "torchscript"): _rounding("sigmoid"), ("conv_half", "dynamo"): _rounding("sigmoid")}
# added after the first run (the engine untouched): the float16 sRGB EOTF, two stories stacked, both patches verified
STACKED = {("srgb_half", "torchscript"): ("dtype", "sequence", {}, "two float16 stories"),
           ("srgb_half", "dynamo"): ("dtype", "sequence", {}, "two float16 stories")}
CLEAN = [("srgb_f32", "dynamo"), ("quant_f32", "torchscript"), ("quant_amp_off", "dynamo"),
         ("shuffle_f32", "torchscript"), ("conv_f32", "dynamo"), ("swin_block", "torchscript"),
         ("swin_block", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms47e", inputs=_IMAGE, seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_quantisation_error_after_float16_ops_gets_its_dropped_rounding_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")
    head = explained(*form)[4].findings[0]
    assert "drops the float16 rounding" in head.message, head.message


@pytest.mark.parametrize("form", params(STACKED, set()))
def test_a_float16_srgb_decode_is_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, STACKED[form], "body")
    assert "in torch's div" in explained(*form)[4].findings[0].message


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(REPAIRED))
    assert len(deep) * 2 >= len(REPAIRED), deep
