"""Held-out batch J for issue 30 (tests/causes/forms40j.py): a blind first run on forms nobody here has tuned on,
written from upstream threads after grepping every earlier suite, screened with torch 2.13 / ONNX Runtime 1.32
(forms40j's docstring lists what was screened and matched, or drifts in a form the suites hold).  Screening (about
20 minutes) found no new drift in attention masking, arithmetic or integer conversions; the batch holds loss,
cumulative and distance forms, all in deep models (20 module calls).  What a right answer is, by mechanism (written
before the first run's causes were read; /tmp/heldJ/judge.md of session 31):

* ``focal_loss`` (loss, deep, both exporters): torchvision's ``sigmoid_focal_loss`` of confident logits; both
  exporters lower BCE-with-logits through ``Log(Sigmoid(x))`` (and TorchScript ``Log(1 - Sigmoid(x))``): inf / NaN
  where torch's kernel is finite: ``stability`` (or ``lowering`` of ``binary_cross_entropy_with_logits``), verified
  by the stable form (``-Softplus``), repairable;
* ``half_cumsum`` (cumulative, deep, TorchScript): a float16 ``cumsum`` on a level of 10, the level taken off:
  ``dtype``, the float16 rounding of the ``Mul`` / ``Add`` before the scan that ONNX Runtime drops, verified by the
  explicit per-op rounding, repairable.  (The judge's first note said float16 accumulation in ``CumSum``; a
  standalone float16 CumSum in ONNX Runtime 1.32 accumulates in float32 exactly as torch does, so the note was
  corrected after the run: the engine's story is the right one.);
* ``prefix_variance`` (cumulative, deep, both exporters): ``E[s^2] - E[s]^2`` over windows by prefix sums on a
  level of 30: ONNX Runtime's float32 ``CumSum`` against torch's double accumulation: ``stability``,
  ``accumulate_float64``, repairable;
* ``self_cdist`` (distance, deep, TorchScript): ``cdist(x, x)`` of 36 rows: both sides take the matrix-product
  route and cancel otherwise on the diagonal: ``stability`` (ill-conditioned, torch's own float32 rounding), the
  float64 counterfactual, not repairable (``repair`` says it has nothing to apply).

First run, engine as on main at 14a52cf (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldJ/firstrun.sh, 3 samples, never tuned on these forms):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| focal_loss torchscript (deep) | right | yes: ``stability``, ``log_sigmoid`` workaround (``-Softplus``) | yes | yes | 5 s / 4 s |
| focal_loss dynamo (deep) | right | **no**: ``op-compat``, a ``nonfinite_guard`` on the ``Log`` ("torch defines the singular points as 0") | yes (the guard) | yes (the guard's zeros are torch's underflowed values) | 7 s / 7 s |
| half_cumsum torchscript (deep) | right | yes: ``dtype``, ``opmath_float32`` (the dropped float16 rounding, microsoft/onnxruntime#8787) | yes | yes | 5 s / 5 s |
| prefix_variance torchscript (deep) | right | yes: ``stability``, ``accumulate_float64``; the op named is "torch's mul", not ``cumsum`` | yes | yes | 6 s / 3 s |
| prefix_variance dynamo (deep) | right | yes, the same | yes | yes | 6 s / 6 s |
| self_cdist torchscript (deep) | right | yes: ``stability``, ill-conditioned, torch's ``cdist`` named | yes (float64) | not repairable: right | 11 s / 10 s |
| controls: focal_loss_small dynamo, prefix_variance_flat torchscript | ok, no error finding | | | | 5 s, 5 s |

First run: origin 6/6; class by mechanism and verified 5/6; repair passing ``check`` 5/5 where a file can exist
(self_cdist: torch's own rounding, "nothing to apply" is the right answer); controls 2/2 clean.  6 of the 6 pairs
sit in deep models (20 module calls).  (``multilabel_margin_loss`` with ``-1``-padded targets was run too, dynamo:
right, verified ``lowering``, repaired; it turned out to be forms37's form and is not counted.)

Why the miss (what decided it):
* ``focal_loss`` dynamo: torchlib's file has ``Log(Sigmoid(x))`` only (no ``Log(1 - Sigmoid)``), and the
  localisation's first divergent node is the ``Log``.  ``propose/patch_budget.by_likelihood`` puts the patches
  whose ``nodes`` hold that node first: the ``nonfinite_guard`` (``propose/edits/singular.py``) at the ``Log`` is one,
  the ``log_sigmoid`` workaround (``propose/rewrites.workaround_patches``) is named by its ``Sigmoid`` only though
  it rewrites the ``Log`` that reads it, so it falls behind; ``verify`` stops at the guard, which verifies because
  torch's values at the NaN elements have underflowed to about 0 (the focal factor times a vanishing loss), and
  the headline tells the singular-point story under ``op-compat``.  On TorchScript's file the first divergent node
  is the ``Sigmoid`` itself, so the workaround comes first and the story is right.  Generic fix: a patch's
  ``nodes`` should be every node it replaces (a rewrite of ``Log(Sigmoid(x))`` names both), and among patches at
  the same suspect node one that computes the value (a stable form) goes before one that replaces it (a guard,
  which should verify only where torch's value is a defined singular value, not a finite one that happens to be
  near 0).
* ``prefix_variance`` (class right): the op named in the message is "torch's mul" (the ``s * s`` feeding the
  second ``CumSum``), not ``torch.cumsum``; forms40f's ``cdist_mm`` had the same first-matched naming.

After the first run (session 32), focal_loss dynamo: a ``nonfinite_guard`` is proposed only where the NaN / inf is a singular point in
any precision (the origin's nodes computed in float64 by the ONNX reference implementation are non-finite there too);
``Log(Sigmoid(x))`` of a confident logit is finite in float64, so no guard.  A workaround names every node it
replaces (the ``Sigmoid`` and the ``Log``), and a ``Sigmoid`` the dynamo optimiser shared between ``torch.sigmoid``
and ``log_sigmoid``'s lowering (the ``Log``'s FX node reads the logits, not the sigmoid) is that lowering's unstable
composite, ``stability``, not ONNX Runtime's kernel.  focal_loss dynamo: ``stability``, ``log_sigmoid``, verified
and repaired.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, assert_verified_not_repairable,
                                     deep_forms, explained_forms, params)

_LOGSIG = ("stability", "rewrite", {"rewrite": "workaround", "form": "log_sigmoid"}, "Softplus")
_HALF = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "float16")
_ACCUMULATE = ("stability", "rewrite", {"rewrite": "accumulate_float64"}, "CumSum")
_F64 = ("stability", "float64", {}, "ill-conditioned")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("focal_loss", "torchscript"): _LOGSIG, ("half_cumsum", "torchscript"): _HALF,
            ("prefix_variance", "torchscript"): _ACCUMULATE, ("prefix_variance", "dynamo"): _ACCUMULATE}
TORCH_ROUNDING = {("self_cdist", "torchscript"): _F64}
# the first run's miss, with the right answer
MISSED_GUARD = {("focal_loss", "dynamo"): _LOGSIG}
CLEAN = [("focal_loss_small", "dynamo"), ("prefix_variance_flat", "torchscript")]
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40j")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_the_held_out_forms_the_first_run_got_right_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)


@pytest.mark.parametrize("form", params(TORCH_ROUNDING, set()))
def test_a_self_cdist_is_told_as_torchs_own_rounding_and_not_repaired(explained, form):
    assert_verified_not_repairable(explained, form, TORCH_ROUNDING[form], ORIGIN)


@pytest.mark.parametrize("form", params(TORCH_ROUNDING, set()))
def test_a_self_cdist_names_torchs_cdist(explained, form):
    assert "torch's cdist" in explained(*form)[4].findings[0].message


@pytest.mark.parametrize("form", params(MISSED_GUARD, set()))
def test_a_dynamo_focal_loss_is_located_verified_and_repaired(explained, form):
    """What the first run got right on the dynamo file: the origin, a verified error head, a file that checks."""
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == ORIGIN
    head = exp.findings[0]
    assert (head.verified, head.severity) == (True, "error"), head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None and engine.recheck(cfg, fixed.model).verdict == "ok"


# the first run's miss: the nonfinite_guard at the first divergent Log verified before the log_sigmoid workaround,
# "singular points" under op-compat.  Since (session 32): no guard where the float64 computation is finite (float32's
# underflow is no singular point), and a Sigmoid the optimiser shared with log_sigmoid's Log is its unstable lowering
@pytest.mark.parametrize("form", params(MISSED_GUARD, set()))
def test_a_dynamo_focal_loss_is_told_as_the_unstable_log_sigmoid(explained, form):
    assert_verified_and_repaired(explained, form, MISSED_GUARD[form], ORIGIN)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TORCH_ROUNDING, *MISSED_GUARD]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep


@pytest.mark.parametrize("form", params({f: v for f, v in REPAIRED.items() if f[0] == "prefix_variance"}, set()))
def test_a_prefix_variance_names_torchs_cumsum_whose_accumulation_the_patch_changed(explained, form):
    """First run (TorchScript): "torch's mul", the first call the alignment by value matched among the origin's nodes
    (the ``s * s`` feeding the second CumSum).  Since: the op named follows from the nodes the verifying patch
    changed, the CumSums, aligned to ``torch.cumsum``."""
    head = explained(*form)[4].findings[0]
    assert head.torch_op == "torch.cumsum" and "in torch's cumsum (torch.cumsum" in head.message, head.message
