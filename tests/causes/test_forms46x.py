"""Held-out batch 46X for issue 30 (tests/causes/forms46x.py): a blind first run on forms nobody here has tuned on,
screened in SCIENTIFIC AND PHYSICS-INFORMED ML (FNO spectral layers through ``rfft`` / ``irfft`` and
``view_as_real``, finite-difference PDE residuals by ``roll`` / ``pad`` + ``conv1d``, Hamiltonian energy heads,
molecular pair distances, Gaussian / Bessel radial bases, cosine cutoffs, polynomial envelopes, ``acos`` / ``atan2``
angles; forms46x's docstring lists the ~60 models screened).  What a right answer is (written before the first run's
causes were read; /tmp/h46X/judge.md): the origin ``body``; for a float16 field or positions at large values (300 K,
a 100 A box) whose stencils / pair differences cancel, class ``dtype`` naming the float16 rounding ONNX Runtime drops
and the torch op whose rounding it is, verified, a repair that passes ``check``; for an unclamped ``acos`` of a
cosine of a vector with itself, class ``stability`` naming ``acos``, no patch (torch's NaN is its own float32
rounding past 1); the controls without an error.

First run, engine at the branch base (75a32626, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h46X/firstrun.sh, 3 samples, 5 for the repaired file's check; ``pair_rbf_box`` added after ``pair_rbf``'s
diagnose came back within budget, run on a copy of the base engine):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| pair_rbf_box torchscript (deep) | right | yes: ``dtype`` (``opmath_float32`` per_op) | yes (``add``) | yes | yes | 50 s / 51 s |
| pair_rbf_box dynamo (deep) | right | yes | yes (``add``) | yes | yes | 45 s / 40 s |
| burgers_half torchscript (deep) | right | yes: ``dtype`` | yes (``add``) | yes | yes | 64 s / 29 s |
| burgers_half dynamo (deep) | right | yes | yes (``add``) | yes | yes | 42 s / 39 s |
| triplet_angle torchscript (shallow) | right | yes: ``stability`` (float64 counterfactual) | yes (``acos``) | n/a (no patch exists, said) | n/a (none written, said) | 16 s / 13 s |
| triplet_angle dynamo (shallow) | right | yes | yes (``acos``) | n/a | n/a | 25 s / 21 s |
| heat_stencil torchscript (shallow) | right | yes: ``dtype`` | **no** (``linear``) | yes | yes | 25 s / 24 s |
| heat_stencil dynamo (shallow) | right | yes | **no** (``linear``) | yes | yes | 33 s / 30 s |
| controls pair_rbf_f32 dy, burgers_f32 ts, triplet_angle_distinct ts + dy, heat_stencil_f32 dy, bessel_envelope ts, spectral_pow2 dy | ok (7/7) | | | | | 26-57 s |
| pair_rbf ts + dy (judged a drift; 2.7e-3, within the documented float16 budget) | WITHIN BUDGET | | | | | 13-30 s |

First run: origin 8/8; class by mechanism 8/8; told 6/8; verified and repair passing check 6/6 where a patch can
exist, the ``acos`` edge said unrepairable 2/2; controls 7/7 (and ``pair_rbf``, my judge's miss, within budget).

Fixed generically: ``propose/numerics/decisive_rounding.py`` (``heat_stencil``'s verified per_op patch needs the
``linear``'s and the ``+ 300``'s roundings together, a double rounding, so neither a single rounding nor a single
omission decided and the story named the first call whose value differs; ``Eval`` now counts the elements over the
tolerance and ``fewest`` names the rounding that alone leaves the fewest, at most a tenth of those with none
restored: the add, 3 of 190; ``test_necessary_rounding.py``).  After (the CLI, seed 7, /tmp/h46X/run2): origin
8/8, class 8/8, told 8/8 (both ``heat_stencil`` pairs now open "in torch's add"), verified and repair passing check
6/6 (WITHIN BUDGET on 5 samples), the ``acos`` edge said unrepairable 2/2; controls 7/7 (and ``pair_rbf`` within
budget; test_forms46x passes them on the fixed engine); diagnose / repair 12-115 s / 6-113 s on a shared machine.
Left: nothing of this batch.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_ADD = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "in torch's add")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("pair_rbf_box", "torchscript"): _ADD, ("pair_rbf_box", "dynamo"): _ADD,
            ("burgers_half", "torchscript"): _ADD, ("burgers_half", "dynamo"): _ADD,
            ("heat_stencil", "torchscript"): _ADD, ("heat_stencil", "dynamo"): _ADD}
# torch's own float32 rounds a cosine past 1: acos's domain edge, no graph edit computes torch's NaN
EDGE = [("triplet_angle", "torchscript"), ("triplet_angle", "dynamo")]
CLEAN = [("pair_rbf", "torchscript"), ("pair_rbf", "dynamo"), ("pair_rbf_f32", "dynamo"),
         ("burgers_f32", "torchscript"), ("triplet_angle_distinct", "torchscript"),
         ("triplet_angle_distinct", "dynamo"), ("heat_stencil_f32", "dynamo"), ("bessel_envelope", "torchscript"),
         ("spectral_pow2", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms46x", seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_float16_field_whose_rounding_onnx_runtime_drops_is_put_back_and_its_op_named(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(EDGE, set()))
def test_an_unclamped_acos_of_a_self_cosine_is_told_as_torchs_own_rounding_without_a_patch(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model

    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check == "stability" and "torch's acos" in head.message, (head.check, head.message)
    assert "nothing to apply" in head.fix, head.fix
    assert "keep acos's argument inside its domain's edge (clamp it" in head.fix, head.fix     # the fix says how
    assert repair_patches(full_model(run.prepared.index), run.result, exp)[0].model is None


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *EDGE]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
