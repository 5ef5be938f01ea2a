"""Held-out batch 46U for issue 30 (tests/causes/forms46u.py): a blind first run on forms nobody here has tuned on,
screened in NEURAL RENDERING AND 3D GEOMETRY CODE written in plain torch (NeRF positional / random Fourier / mip-NeRF
integrated encodings, volume rendering, ray/box and ray/sphere intersection, quaternion <-> matrix, axis-angle by
``acos`` / ``atan2``, Rodrigues, pinhole projection, SDFs, spherical harmonics, 3DGS covariance; float32, a
``.half()`` module, autocast; forms46u's docstring lists the ~50 models screened).  The exporters compute what torch
computes for the geometry itself; what drifts is a sine of a large argument: in float32 at 16 frequencies (torch's
own rounding amplified) and wherever the argument is float16.  What a right answer is (written before the first
run's causes were read; /tmp/h46U/judge.md): the origin ``body``; for ``posenc_hi`` class ``stability`` naming
``sin``, no patch (the float64 counterfactual); for the autocast encodings class ``dtype`` naming the float16
rounding, verified, and a repair.  ``vollog_amp`` and ``gauss_cov_half`` were judged drifts by the screen's float32
threshold (5e-4 and 7e-3 of the output); drifttui's documented float16 budget (4 eps of the scale) holds them, so
their right answer is no error finding, as the engine said: they are counted as controls.

First run, engine at the branch base (75a32626, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h46U/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| posenc_hi torchscript (deep) | right | yes: ``stability`` (float64 counterfactual) | yes: ``sin`` | yes (no patch exists, said) | n/a (none written, said) | 45 s / 32 s |
| posenc_hi dynamo (deep) | right | yes | yes | yes (said) | n/a (said) | 61 s / 73 s |
| posenc_amp torchscript (shallow) | right | yes: ``dtype`` (ORT drops the float16 rounding) | yes: ``mul`` | yes: ``opmath_float32`` | yes | 44 s / 44 s |
| posenc_amp dynamo (shallow) | right | yes | yes | yes | yes | 82 s / 74 s |
| fourier_amp torchscript (deep) | right | **no**: ``stability`` (float64 counterfactual) | **no**: ``matmul`` | **no** (float64 only) | **no file** | 56 s / 43 s |
| fourier_amp dynamo (deep) | right | **no**: ``stability`` | **no** | **no** | **no file** | 87 s / 90 s |
| controls posenc10 dy, fourier_f32 ts, vollog_f32 dy, quat_roundtrip ts, ray_box_amp dy, vollog_amp ts + dy, gauss_cov_half dy, gauss_cov_f32 dy | ok (9/9) | | | | | 58-124 s |

First run: origin 6/6; class by mechanism 4/6; told 4/6; verified 4/6 (posenc_hi by the float64 counterfactual, no
patch exists, said unrepairable 2/2); repair passing check 2/4 where a patch can exist; controls 9/9.

``fourier_amp``'s mechanism: two float16 stories stacked under a ``sin`` of arguments around 200: the TorchScript
``Constant`` / dynamo ``scalar_tensor`` holds ``2 * math.pi`` as float16 6.28125 where torch multiplies by the
float32 number and rounds once, and ONNX Runtime's inserted Casts drop the float16 rounding of the product before
``Sin``.  The engine's stacked patch (``opmath_stacked.py``: the scalar then ``per_op``) brings the origin from 0.127
to 7e-3, what torch's own float16 leaves (Tanh's last float32 bit flips a float16 rounding that the sine amplifies):
``conditioned_first`` had already verified the float64 counterfactual, so ``torch_rounding.py``'s rule never ran, and
a ``sequence`` was not a named mechanism for it.  Fixed generically (``causes/verify.py``: the rule runs where only
the conditioning counterfactual verified; ``propose/numerics/torch_rounding.py``: a sequence of named mechanisms is
named; ``test_torch_rounding.py``).  After (the CLI, seed 7, /tmp/h46U/run2): ``fourier_amp`` both exporters ``dtype``, told ``mul`` ("two float16
stories at one origin": the scalar read as 6.28125 and the dropped rounding), verified to torch's own precision (the
origin from 0.127 to 7.1e-3), ``repair`` writes the stacked patch: the output 1.0e-3 off torch where it was 3.3e-2
(``check`` still flags what torch's own float16 leaves under the sine, and says so); diagnose / repair 89 s / 86 s
(TorchScript), 139 s / 131 s (dynamo) on a shared machine.  Totals after: origin 6/6, class 6/6, told 6/6, verified
6/6 (2 by the float64 counterfactual, said unrepairable; 2 to torch's precision), repair passing check 2/4 (the other
2 repaired 32x closer, not under the tolerance by construction); controls 9/9.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, assert_verified_not_repairable,
                                     assert_verified_to_torch_precision, deep_forms, explained_forms, params)

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
_STACKED = ("dtype", "sequence", {}, "two float16 stories")
_CONDITIONING = ("stability", "float64", {"module": "body"}, "ill-conditioned function")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("posenc_amp", "torchscript"): _ROUNDING, ("posenc_amp", "dynamo"): _ROUNDING}
TORCH_PRECISION = {("fourier_amp", "torchscript"): _STACKED, ("fourier_amp", "dynamo"): _STACKED}
CONDITIONED = {("posenc_hi", "torchscript"): _CONDITIONING, ("posenc_hi", "dynamo"): _CONDITIONING}
CLEAN = [("posenc10", "dynamo"), ("fourier_f32", "torchscript"), ("vollog_f32", "dynamo"),
         ("quat_roundtrip", "torchscript"), ("ray_box_amp", "dynamo"), ("vollog_amp", "torchscript"),
         ("vollog_amp", "dynamo"), ("gauss_cov_half", "dynamo"), ("gauss_cov_f32", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms46u", seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_an_autocast_encoding_whose_float16_rounding_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(TORCH_PRECISION, set()))
def test_a_float16_scalar_and_dropped_roundings_under_a_sine_verify_to_torchs_own_precision(explained, form):
    assert_verified_to_torch_precision(explained, form, TORCH_PRECISION[form], "body")


@pytest.mark.parametrize("form", params(CONDITIONED, set()))
def test_a_float32_encoding_at_16_frequencies_is_torchs_own_rounding_amplified_and_said_unrepairable(explained, form):
    assert_verified_not_repairable(explained, form, CONDITIONED[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TORCH_PRECISION, *CONDITIONED]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
