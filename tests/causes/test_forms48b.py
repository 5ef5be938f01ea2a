"""Held-out batch 48B for issue 30 (tests/causes/forms48b.py): a blind first run on forms nobody here has tuned on,
screened in STYLE-BASED GENERATORS AND GAN CODE (StyleGAN2 modulated / demodulated grouped convolution, upfirdn2d FIR
resampling, noise injection, AdaIN, minibatch std, equalized learning rate, the truncation trick, SPADE; forms48b's
docstring lists the ~60 exports screened).  In float32 the exporters compute what torch computes for all of it; what
drifts past drifttui's tolerance is the dynamo optimizer's dropped ``+ 1e-8`` where it makes a NaN (ProGAN's pixel
norm of an all-zero ReLU pixel), a float16 StyleGAN2-ADA layer whose Conv ONNX Runtime runs through float32 Casts,
and a noise injection drawing ``torch.randn`` in the forward.  What a right answer is (written before the first run;
/tmp/h48b/judge.md): the origin ``body``; ``lowering`` naming the dropped addend, verified and repaired; ``dtype``
naming the float16 rounding ONNX Runtime drops, verified and repaired; for the draw no origin and a
``custom-module`` finding naming ``torch.randn`` with no patch; the controls without an error.

First run, engine at the branch base (9597206d, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h48b/firstrun.sh, 3 samples, 5 for the repaired file's check; /tmp/h48b/run1):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| pixnorm_relu dynamo (deep) | right | yes: ``lowering`` (``dropped_addend``) | yes (``torch.Tensor.rsqrt``, ``+ 1e-08``) | yes | yes | 38 s / 38 s |
| modconv_half torchscript (shallow) | right | yes: ``dtype`` (``opmath_float32``) | yes (``torch.conv2d``) | yes | yes | 16 s / 20 s |
| modconv_half dynamo (shallow) | **none: WITHIN BUDGET** | **no** | no | **no** | **no file** | 47 s / 36 s |
| noise_random torchscript (shallow) | right (none: torch differs from itself) | yes: ``custom-module`` | yes (``torch.randn``) | n/a (no patch exists, said) | n/a | 15 s / 10 s |
| noise_random dynamo (shallow) | right | yes | yes | n/a (said) | n/a | 19 s / 21 s |
| trunc_half torchscript (deep) | **none: WITHIN BUDGET** | **no** | no | **no** | **no file** | 22 s / 11 s |
| trunc_half dynamo (deep) | **none: WITHIN BUDGET** | **no** | no | **no** | **no file** | 41 s / 23 s |
| mbstd dynamo (deep; judged a drift) | none: OK | (see below) | | | | 31 s / 23 s |
| controls mbstd ts, pixnorm_relu ts, pixnorm_leaky dy, trunc_f32 dy, modconv_f32 ts, noise_const dy, fir_spade dy | ok (7/7) | | | | | 24-53 s |

First run: origin 4/7 judged drifts (the draw's right answer is no origin); class by mechanism 4/7; told 4/7;
verified and repair passing check 2/5 where a patch can exist; the draw said unrepairable 2/2; controls 7/7.
The judge was wrong on ``mbstd`` dynamo: the dynamo optimizer drops minibatch std's ``+ 1e-8`` there too (lowering, found by the screen at 3.7e-4 of the output's
scale), but ``sqrt(v + 1e-8) - sqrt(v)`` is at most ``1e-4`` absolute, under drifttui's ``atol``: the OK is the
tool's documented rule (kept as a control).  The controls after ``trunc_f32`` ran while the fix below was in the
worktree; they hold no float16 value, on which it is inert.

Fixed generically: ``prepare/precision.py`` (+ ``prepare/stage.py`` passing the torch model's tensor sizes): a
float16 initializer the size of none of the model's parameters and buffers is a value of the forward the exporter
folded (``const.repeat(n, ...).to(float16)``, a (1, 2n, 4, 4) initializer in the dynamo file where the TorchScript
file keeps a Cast), evidence of the model's own cast held to the float32 rule, not a converted weight given the
float16 budget.  ``tests/engine/test_folded_half_values.py``.  After (/tmp/h48b/run2): modconv_half dynamo: origin
``body``, ``dtype`` naming ``torch.conv2d`` and the float16 rounding ONNX Runtime drops, verified, repaired file
passes check.  Totals after: origin 5/7, class 5/7, told 5/7, verified and repair passing check 3/5, the draw
said unrepairable 2/2, controls 7/7 (and ``mbstd`` dynamo OK).

Left: ``trunc_half`` (both exporters): the truncation ``w_avg.to(float16).lerp(w.to(float16), psi)``: both exporters
fold the buffer's cast into a (32,) float16 initializer, the size of the buffer: by the scan's rule a converted
weight, so the file is held to the float16 budget and its 4-5e-4 (half a float16 ulp: torch's lerp rounds once
from float32, the file's Sub / Mul / Add in float16) is within it.  Telling a converter's weight from the model's
own cast of a same-sized buffer needs more than the file and the model's sizes (a strict xfail below).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
_ADDEND = ("lowering", "rewrite", {"rewrite": "dropped_addend"}, "+ 1e-08")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("pixnorm_relu", "dynamo"): _ADDEND, ("modconv_half", "torchscript"): _ROUNDING,
            ("modconv_half", "dynamo"): _ROUNDING}
RANDOM = [("noise_random", "torchscript"), ("noise_random", "dynamo")]
LEFT = [("trunc_half", "torchscript"), ("trunc_half", "dynamo")]
CLEAN = [("mbstd", "dynamo"), ("mbstd", "torchscript"), ("pixnorm_relu", "torchscript"), ("pixnorm_leaky", "dynamo"),
         ("trunc_f32", "dynamo"), ("modconv_f32", "torchscript"), ("noise_const", "dynamo"), ("fir_spade", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms48b")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_dropped_eps_or_a_float16_gan_layer_is_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(RANDOM, set()))
def test_a_noise_injection_drawing_in_the_forward_is_named_with_no_patch(explained, form):
    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin is None
    head = next(f for f in exp.findings if f.severity == "error")
    assert (head.check, head.module, head.verified) == ("custom-module", "body", False), (head.check, head.message)
    assert "torch.randn" in head.message and "no patch exists" in head.message, head.message


@pytest.mark.parametrize("form", missed(LEFT, "a float16 cast of a same-sized buffer reads as a converted weight"))
def test_a_float16_truncation_lerp_is_held_to_the_float32_rule(explained, form):
    assert_verified_and_repaired(explained, form, _ROUNDING, "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_the_deep_forms_are_the_pixel_norm_and_the_truncation(explained):
    # 3 of 7 (short of half: ``mbstd`` dynamo, judged a deep drift, is within the tolerance)
    forms = [*REPAIRED, *RANDOM, *LEFT]
    assert deep_forms(explained, forms) == [("pixnorm_relu", "dynamo"), *LEFT]
