"""Held-out batch 43J for issue 30 (tests/causes/forms43j.py): a blind first run on forms nobody here has tuned on,
screened in DIFFUSION-MODEL CODE AS DEPLOYERS EXPORT IT (diffusers' UNet2DModel / UNet2DConditionModel /
AutoencoderKL / Transformer2DModel with small seeded configs, sinusoidal and Gaussian-Fourier timestep embeddings,
DDPM / DDIM / Euler / DPM-Solver / LCM scheduler math in the forward, classifier-free guidance, GroupNorm + SiLU,
nearest upsampling to a skip's size, the VAE's latent distribution; forms43j's docstring lists the ~110 exports).
In float32 all of it computes what torch computes; what drifts past the tolerance with both exporters is float16:
Python scalars the exporters write in float16 (``np.pi`` as 3.140625) and the float16 roundings ONNX Runtime's CPU
drops (microsoft/onnxruntime#8787), where a phase of hundreds of radians or an overflow to inf makes them count.
What a right answer is (written before the first run; /tmp/h43j/judge.md): the origin (``unet.time_proj``,
``body.proj``, ``body``); class ``dtype`` naming the float16 scalar and/or the dropped rounding, verified; a repair
that passes ``check``; controls (the same code in float32) without an error.

First run, engine at the branch base (b679df19, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h43j/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| fourier_unet torchscript (deep, 107 modules) | right (``unet.time_proj``) | **no**: ``lowering`` of ``sin`` | no | **no** (11 patches) | no file | 43 s / 38 s |
| fourier_unet dynamo (deep) | right | **no**: ``lowering`` of ``sin`` | no | **no** (10 patches) | no file | 82 s / 64 s |
| lcm_scalings torchscript (deep) | right (``body``) | yes: ``dtype``, ``opmath_float32`` | yes (``pow``) | yes | yes | 14 s / 12 s |
| lcm_scalings dynamo (deep) | right | yes | yes (``pow``) | yes | yes | 13 s / 9 s |
| half_sinusoid torchscript (shallow) | right (``body``) | yes: ``dtype``, ``opmath_float32`` | yes (``mul``) | yes | yes | 5 s / 5 s |
| half_sinusoid dynamo (shallow) | right | yes | yes | yes | yes | 10 s / 10 s |
| fourier_proj torchscript (shallow) | right (``body.proj``) | **no**: ``lowering`` of ``cos`` | no | **no** (11 patches) | no file | 14 s / 14 s |
| fourier_proj dynamo (shallow) | right | **no**: ``lowering`` of ``cos`` | no | **no** (10 patches) | no file | 14 s / 14 s |
| controls fourier_unet32, lcm_scalings32, fourier_proj32 (both exporters) | ok (6/6) | | | | | 7-21 s |

First run: origin 8/8; class by mechanism 4/8; told 4/8; verified 4/8; repair passing check 4/8; controls 6/6.
The four misses are one: the scalar's patch (pi put back) and the rounding patch were both tried, each alone moved
the phase by about half the error, and the composition of two mechanisms asked ten times of its first patch.

Fixed generically: ``propose/residual.py`` (a patch that puts torch's own number back, ``opmath_scalar``, is a fact of
the file and is composed with the dropped roundings whatever it gained alone; ``test_scalar_and_rounding.py``).
After (the CLI, seed 7, and this file, seeds of the suite): origin 8/8, class 8/8, told 8/8, verified 8/8, repair
passing check 8/8; controls 6/6.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
_PI_AND_ROUNDING = ("dtype", "sequence", {}, "Python scalar 3.14159 as the float16 constant 3.14062")
# (model, exporter) -> (the head finding a right answer gives: class, patch op, what it changed, words; the origin)
REPAIRED = {("lcm_scalings", "torchscript"): (_ROUNDING, "body"), ("lcm_scalings", "dynamo"): (_ROUNDING, "body"),
            ("half_sinusoid", "torchscript"): (_ROUNDING, "body"), ("half_sinusoid", "dynamo"): (_ROUNDING, "body"),
            ("fourier_proj", "torchscript"): (_PI_AND_ROUNDING, "body.proj"),
            ("fourier_proj", "dynamo"): (_PI_AND_ROUNDING, "body.proj"),
            ("fourier_unet", "torchscript"): (_PI_AND_ROUNDING, "unet.time_proj"),
            ("fourier_unet", "dynamo"): (_PI_AND_ROUNDING, "unet.time_proj")}
CLEAN = [("fourier_unet32", "torchscript"), ("fourier_unet32", "dynamo"), ("lcm_scalings32", "torchscript"),
         ("lcm_scalings32", "dynamo"), ("fourier_proj32", "torchscript"), ("fourier_proj32", "dynamo")]
UNET = {"fourier_unet": "unet_inputs", "fourier_unet32": "unet_inputs"}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms43j", inputs=UNET)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_float16_diffusion_code_is_put_back_as_torch_rounds_it(explained, form):
    expected, origin = REPAIRED[form]
    assert_verified_and_repaired(explained, form, expected, origin)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
