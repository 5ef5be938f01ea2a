"""Held-out batch 47B for issue 30 (tests/causes/forms47b.py): a blind first run on forms nobody here has tuned on,
screened in REINFORCEMENT-LEARNING POLICY AND VALUE NETWORKS AS DEPLOYED FOR INFERENCE (SAC's tanh-squashed Gaussian
with its ``log(1 - tanh(u)^2 + eps)`` or softplus correction, C51 / QR-DQN / IQN heads, the value rescaling ``h`` and
its inverse, dueling heads, action masking with ``-inf`` / ``finfo.min``, running observation normalisers, Beta and
categorical heads, float16 heads; forms47b's docstring lists the 62 variants screened).  What a right answer is
(written before the first run's causes were read; /tmp/h47b/judge.md): the origin ``body``; for SAC's correction of
a saturated float32 action, class ``op-compat`` naming torch's ``tanh`` (ONNX Runtime's MLAS Tanh is ~5 ulps off,
``1 - tanh^2`` cancels), verified by computing the Tanh otherwise, a repair that passes ``check``; for ``h^-1`` of
small float32 values, class ``stability`` naming torch's ``sqrt`` (torch's float32 sqrt is not correctly rounded on
this AVX-512 build, ONNX Runtime's is), no patch; for the float16 heads, class ``dtype`` naming a torch op, verified,
a repair that passes ``check``; the controls without an error.

First run, engine untouched at the branch base (739059c1, ``drifttui diagnose`` / ``repair`` / ``check --seed 7``
through /tmp/h47b/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| sac_tanh torchscript (deep) | right | **no**: ``stability`` ("as the exporter lowered it") | yes (``tanh``) | yes | yes | 34 s / 29 s |
| sac_tanh dynamo (deep) | right | **no**: ``stability`` (kind export) | yes (``tanh``) | yes | yes | 48 s / 36 s |
| value_inv torchscript (shallow) | right | yes: ``stability`` | **no** (``sub``) | **wrongly yes** (float64) | **no** (check DRIFT) | 52 s / 44 s |
| value_inv dynamo (shallow) | right | yes | **no** (``sub``) | **wrongly yes** | **no** | 53 s / 58 s |
| sac_half torchscript (shallow) | right | yes: ``dtype`` (``opmath_float32`` per_op) | yes (``tanh``) | yes | yes | 69 s / 65 s |
| sac_half dynamo (shallow) | right | yes | yes (``tanh``) | yes | yes | 74 s / 79 s |
| value_inv_half torchscript (deep) | right | yes: ``dtype`` (two float16 stories) | yes (add / mul / div) | yes | yes | 59 s / 76 s |
| value_inv_half dynamo (deep) | right | yes | yes | yes | yes | 89 s / 87 s |
| controls sac_softplus ts + dy, value_h ts, dueling dy, masked_policy ts, obs_norm dy | ok (6/6) | | | | | 38-78 s |

First run: origin 8/8; class by mechanism 6/8; told 6/8; verified and repair passing check 6/6 where a patch can
exist; the torch-sqrt pairs said unrepairable 0/2 (a float64 patch called verified at the tolerance: ``origin_float64``
1.22e-4 -> 1.05e-4; its file fails ``check``); controls 6/6.  (A first ``sac_half``, deep at scale 10, 1.2e-2 off, was WITHIN BUDGET of float16: the
engine's rule, my screening's mistake; replaced before its other results were read by the shallow one at scale 3.)
The judge expected ``value_inv_half`` as a dropped rounding only; the engine's head names two stories, torch's
Python scalars held in float32 (the file's float16 constants 0.001 / 0.004 / 0.002) and the dropped rounding, and
both patches together verify: right by mechanism.

Fixed generically: ``causes/locate/exact_unary.py`` (the ONNX reference evaluator's float32 ``Tanh`` / ``Exp`` /
``Log`` / ``Sin`` ... are numpy's SIMD approximations, a few ulps off as ONNX Runtime's MLAS kernels are; they are
now computed in float64 and rounded once, so where ``1 - tanh^2`` cancels the reference sides with torch and the
kernel is named ONNX Runtime's: ``op-compat``, kind ``runtime``; ``test_exact_reference.py``).  After (the CLI,
seed 7, /tmp/h47b/run2): ``sac_tanh`` both exporters ``op-compat`` "ONNX Runtime's Tanh kernel is wrong", verified,
repaired files pass ``check``: class 8/8, told 6/8, verified and repair 6/6, torch-sqrt 0/2 (unchanged, strict
xfails below), controls 6/6.
Left: ``value_inv``: torch's float32 ``sqrt`` on this AVX-512 build is not correctly rounded (17% of values 1 ulp
off; ONNX Runtime's and numpy's are exact), and ``h^-1`` amplifies one ulp past the tolerance; the engine's float64
counterfactual lands 1.05e-4 from torch (the tolerance 1.06e-4) and is called verified.  What is lacking: a test
that torch's own kernel of one elementwise op is off its correctly rounded value where the file's is not (then "torch's
own float32 result", naming ``sqrt``, no patch).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms,
                                     params)

_TANH = ("op-compat", "rewrite", {"rewrite": "workaround", "form": "tanh_exp"}, "ONNX Runtime's Tanh kernel")
_SCALARS = ("dtype", "sequence", {}, "torch's add / sub / mul / div hold each Python number in float32")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "in torch's tanh")
REPAIRED = {("sac_tanh", "torchscript"): _TANH, ("sac_tanh", "dynamo"): _TANH,
            ("sac_half", "torchscript"): _ROUNDING, ("sac_half", "dynamo"): _ROUNDING,
            ("value_inv_half", "torchscript"): _SCALARS, ("value_inv_half", "dynamo"): _SCALARS}
# torch's own float32 sqrt (1 ulp off for 17% of values) under h^-1's two cancellations: no graph edit reproduces it
TORCH_SQRT = [("value_inv", "torchscript"), ("value_inv", "dynamo")]
CLEAN = [("sac_softplus", "torchscript"), ("sac_softplus", "dynamo"), ("value_h", "torchscript"),
         ("dueling", "dynamo"), ("masked_policy", "torchscript"), ("obs_norm", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms47b", seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_saturated_squashed_action_or_a_float16_value_rescaling_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(TORCH_SQRT, set()))
def test_the_inverse_value_rescaling_is_torchs_own_sqrt_without_a_patch(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model

    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check == "stability" and "in torch's sqrt" in head.message, (head.check, head.message)
    assert repair_patches(full_model(run.prepared.index), run.result, exp)[0].model is None


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TORCH_SQRT]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
