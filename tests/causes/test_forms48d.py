"""Held-out batch 48D for issue 30 (tests/causes/forms48d.py): a blind first run on forms nobody here has tuned on,
screened in THE NORMALIZATION ZOO BEYOND BATCHNORM / LAYERNORM (RMSNorm variants with offsets and float32 upcasts,
weight standardization, FRN + TLU, EvoNorm-S0 / B0, ScaleNorm, PowerNorm, LayerScale, DyT, GroupNorm with odd group
counts, cosine-normalised linear layers, InstanceNorm with running stats; forms48d's docstring lists the ~60 modules
screened).  In float32 every one of them exports to what torch computes; what drifts past the tolerance is float16:
ONNX Runtime's dropped float16 rounding (a ``pow`` torch overflows to inf, an autocast ``x + 40`` before a
GroupNorm), and torch's own float16 ``instance_norm``, which rounds its mean to float16.  What a right answer is
(written before the first run's causes were read; /tmp/h48d/judge.md): the origin ``body`` (``body.norm`` where the
drift is the norm's own call); class ``dtype`` naming the op whose float16 rounding differs; verified and a repair
that passes ``check`` where a patch exists; the controls without an error.

First run, engine at the branch base (9597206d, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h48d/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| half_instance torchscript (deep) | right (``body.norm``) | **no**: ``normalization`` (says ORT's kernel deviates) | no | **no** | **no file** | 52 s / 54 s |
| half_instance dynamo (deep) | right (``body.norm``) | **no**: ``normalization`` | no | **no** | **no file** | 58 s / 73 s |
| amp_groupnorm torchscript (deep) | **none** (OVER BUDGET, no origin: drifts only at ORT basic+) | **no** | no | **no** | yes, by the precision route: a keep-in-float32 copy (two Casts) WITHIN BUDGET at the outputs' level all | 30 s / 24 s |
| amp_groupnorm dynamo (deep) | right | yes: ``dtype`` per_op | yes (``add``) | yes | yes | 30 s / 37 s |
| half_frn torchscript (deep) | right | **no**: ``lowering`` | no (``mean``) | **no** (per_op leaves 1 float16 ulp: torch's ``rsqrt`` against ``Div(1, Sqrt)``) | **no file** | 45 s / 43 s |
| half_frn dynamo (deep) | right | yes: ``dtype`` per_call | no (``rsqrt``, not ``pow``) | yes | yes | 50 s / 53 s |
| half_rms torchscript (shallow) | right | yes: ``dtype`` per_op | yes (``pow``) | yes | yes | 21 s / 24 s |
| half_rms dynamo (shallow) | right | yes | yes | yes | yes | 21 s / 15 s |
| controls half_instance_f32 ts, amp_groupnorm_off dy, half_frn_cool ts, half_rms_cool dy, std_conv ts + dy, dyt dy | ok (7/7) | | | | | 16-33 s |

First run: origin 7/8; class by mechanism 4/8; told 3/8; verified 4/8; repair passing check 5/8 (amp_groupnorm
torchscript's by the keep-in-float32 list, with no cause found; a patch can exist for all 8: half_instance's would
round the mean as torch's kernel does); controls 7/7.  The judge's note for
amp_groupnorm had the mechanism wrong (torch's CPU autocast keeps group_norm in float16; what ORT drops is the
rounding of the ``+ 40`` before it), and half_instance's had the direction wrong (torch's float16 kernel, not ORT's,
is the one off its float32 value): the table judges by the mechanism measured after (/tmp/h48d/judge.md).

Fixed generically: ``locate/evaluate.judged_error`` and ``propose/numerics/opmath.py``: an opmath ``per_op`` patch is
judged at the float16 rounding budget (as ``per_call`` is), passing there only where it removed ``GAIN`` (16) times
what it leaves: a TorchScript file records no call, and its ``rsqrt`` as ``Div(1, Sqrt)`` flips one float16 rounding
of torch's fused kernel (``test_rounding_gain.py``).  After (the CLI, seed 7, /tmp/h48d/run2): half_frn torchscript
right on all five counts (``per_op``, "in torch's pow", repaired file WITHIN BUDGET on 5 samples), and half_frn
dynamo now told too (``per_op`` "in torch's pow" heads where ``per_call`` "rsqrt" did; /tmp/h48d/run3); the other
pairs rerun (half_rms ts, amp_groupnorm dy, half_instance ts, two controls) unchanged.  Totals after: origin 7/8,
class 5/8, told 5/8, verified 5/8, repair passing check 6/8, controls 7/7.  Left: half_instance (both exporters) and
amp_groupnorm torchscript, strict xfails below.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

_DROPPED = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("half_rms", "torchscript"): _DROPPED, ("half_rms", "dynamo"): _DROPPED,
            ("amp_groupnorm", "dynamo"): _DROPPED, ("half_frn", "dynamo"): _DROPPED,
            ("half_frn", "torchscript"): _DROPPED}
ORIGINS = {"half_rms": "body", "amp_groupnorm": "body", "half_frn": "body"}
# torch's own float16 instance_norm rounds its mean to float16: no patch here tells it (a first-run miss)
TORCH_KERNEL = [("half_instance", "torchscript"), ("half_instance", "dynamo")]
# the drift only at ORT basic and above, where the layer pass's observed run keeps the rounding: no origin
LEVEL_ONLY = [("amp_groupnorm", "torchscript")]
CLEAN = [("half_instance_f32", "torchscript"), ("amp_groupnorm_off", "dynamo"), ("half_frn_cool", "torchscript"),
         ("half_rms_cool", "dynamo"), ("std_conv", "torchscript"), ("std_conv", "dynamo"), ("dyt", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms48d", seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_float16_normalisation_whose_rounding_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGINS[form[0]])


@pytest.mark.parametrize("form", missed(TORCH_KERNEL, "torch's float16 instance_norm rounds its mean to float16 "
                                                      "(its own kernel's precision): no finding tells it yet"))
def test_torch_own_float16_instance_norm_is_told_as_the_precision_it_computes_in(explained, form):
    _, _, _, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body.norm"
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check == "dtype" and "instance_norm" in head.message, (head.check, head.message)


@pytest.mark.parametrize("form", missed(LEVEL_ONLY, "drifts only at ORT basic+, where fetching the layers keeps the "
                                                    "rounding ORT drops otherwise: no origin named"))
def test_a_rounding_dropped_only_at_ort_basic_names_its_origin(explained, form):
    _, _, _, result, _ = explained(*form)
    assert result.drift_origin is not None and result.drift_origin.module == "body"


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TORCH_KERNEL, *LEVEL_ONLY]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
