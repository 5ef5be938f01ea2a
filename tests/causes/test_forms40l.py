"""Held-out batch L for issue 30 (tests/causes/forms40l.py): a blind first run on forms nobody here has tuned on,
written from upstream threads after grepping every earlier suite, screened with torch 2.13 / ONNX Runtime 1.32
(forms40l's docstring lists what was screened and matched, or drifts in a form the suites hold).  Screening (about
35 minutes) found no new drift in the loss family; the batch holds cumulative (a diffusers scheduler step on
``alphas_cumprod``) and distance forms, all in deep models (20 module calls).  What a right answer is, by mechanism
(written before the first run's causes were read; /tmp/heldL/judge.md of session 32):

* ``ddim_x0_half`` (deep, both exporters): a float16 DDIM ``pred_original_sample``: ``dtype``, the float16 rounding
  ONNX Runtime's CPU drops between the ops (microsoft/onnxruntime#8787), verified by the explicit per-op rounding,
  repairable;
* ``angular_near`` (deep, both exporters): ``acos`` of the cosine of near-duplicates: ``stability`` (ill-conditioned,
  torch's own float32 rounding), the float64 counterfactual, not repairable (``repair`` says it has nothing to apply);
* ``cdist_25`` (deep, TorchScript): 25 x 25 rows, where the TorchScript symbolic takes the matrix-product route and
  torch does not: ``lowering`` of ``cdist``, verified by a re-trace through torch's definition, repairable;
* ``batch_prototypes`` (deep, TorchScript with a dynamic batch): the symbolic cannot read the row count and takes the
  matrix-product route: ``lowering`` of ``cdist`` (on a dynamic size), verified, repairable.

First run, engine as on main at be1c203 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldL/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with four other
sessions):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| ddim_x0_half torchscript (deep) | right | yes: ``dtype``, ``opmath_float32`` per op (the dropped float16 rounding) | yes | yes | 6 s / 7 s |
| ddim_x0_half dynamo (deep) | right | yes, the same | yes | yes | 15 s / 23 s |
| angular_near torchscript (deep) | right | yes: ``stability``, ill-conditioned, torch's ``acos`` named | yes (float64) | not repairable: right | 33 s / 34 s |
| angular_near dynamo (deep) | right | yes, the same | yes (float64) | not repairable: right | 29 s / 28 s |
| cdist_25 torchscript (deep) | right | yes: ``lowering`` of ``aten._cdist_forward`` (make_fx re-trace, torch's ``cdist`` named) | yes | yes | 21 s / 17 s |
| batch_prototypes torchscript, dynamic batch (deep) | right | **no**: ``versions`` ("exported alone with the TorchScript exporter on the runtime input shapes (opset 17)") | yes (the static re-export) | yes | 13 s / 9 s |
| controls: ddim_x0_float dynamo, angular_far torchscript, cdist_24 torchscript | ok, no error finding | | | | 9 s, 10 s, 7 s |

First run: origin 6/6; class by mechanism and verified 5/6; repair passing ``check`` 4/4 where a file can exist
(angular_near: torch's own rounding, "nothing to apply" is the right answer, 2/2); controls 3/3 clean.  6 of the 6
pairs sit in deep models (20 module calls).

Why the miss (what decided it):
* ``batch_prototypes``: for a user's file the first re-exports are today's exporters on the runtime input shapes,
  which are static.  The TorchScript one verifies, and ``reexport_story._by_variant`` tells a verified re-export by
  the file's own exporter, with nothing else changed, as ``versions`` (the file was made by another torch or edited).
  But the sizes did change: the file declares the batch dynamic, and the symbolic's route depends on whether it can
  read the row count.  Fixed in ``propose/reexport/dynamic_lowering.py``: such a re-export is made once more with the file's
  dynamic dims; when that one differs from torch on the sample and the static one does not, the cause is the
  lowering of the call the values name on a dynamic size (``lowering``, "on a size the file declares dynamic"), and
  the fix is the static size.
* cost (class right): the ``angular_near`` pairs took 29-33 s, 21 s of it in 8 re-exports that could not compute
  torch's own float32 rounding; the float64 counterfactual came after them.  Fixed in
  ``propose/conditioning.conditioned_first`` (called from ``verify._conditioned_or_reexports``): where torch's own
  float32 error is of the file's size it is tried before the re-exports, which are then said skipped.

After both fixes (same harness, /tmp/heldL/out2): origin 6/6, class by mechanism and verified 6/6, repair passing
``check`` 4/4 (and "nothing to apply" on the 2 ill-conditioned pairs), controls 3/3 clean; diagnose / repair 7-15 s /
3-11 s (``angular_near`` 8 s / 6 s torchscript, 11 s / 8 s dynamo; ``batch_prototypes`` 11 s / 9 s).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, assert_verified_not_repairable,
                                     deep_forms, explained_forms, params)

_HALF = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "float16")
_CDIST = ("lowering", "reexport", {"retrace": "make_fx_core_aten"}, "cdist")
_DYNAMIC = ("lowering", "reexport", {"exporter": "torchscript"}, "on a size the file declares dynamic")
_F64 = ("stability", "float64", {}, "ill-conditioned")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("ddim_x0_half", "torchscript"): _HALF, ("ddim_x0_half", "dynamo"): _HALF,
            ("cdist_25", "torchscript"): _CDIST, ("batch_prototypes", "torchscript"): _DYNAMIC}
TORCH_ROUNDING = {("angular_near", "torchscript"): _F64, ("angular_near", "dynamo"): _F64}
CLEAN = [("ddim_x0_float", "dynamo"), ("angular_far", "torchscript"), ("cdist_24", "torchscript")]
ORIGIN = "body"
DYNAMIC = {"batch_prototypes"}       # exported with a dynamic batch


def _dynamic_batch(model: str, exporter: str) -> dict:
    return {"input_names": ["x"], "dynamic_axes": {"x": {0: "batch"}}} if model in DYNAMIC else {}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40l", export=_dynamic_batch)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_the_held_out_forms_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)


@pytest.mark.parametrize("form", params(TORCH_ROUNDING, set()))
def test_an_angle_of_near_duplicates_is_told_as_torchs_own_rounding_and_not_repaired(explained, form):
    assert_verified_not_repairable(explained, form, TORCH_ROUNDING[form], ORIGIN)
    assert "torch's acos" in explained(*form)[4].findings[0].message


@pytest.mark.parametrize("form", params(TORCH_ROUNDING, set()))
def test_an_angle_of_near_duplicates_is_told_before_any_re_export_and_says_so(explained, form):
    """torch's own float32 error is the file's size: the float64 counterfactual verifies before the re-exports (each
    an export: 21 s of the first run's 33 s), and the finding says which re-exports were not tried."""
    head = explained(*form)[4].findings[0]
    verification = head.evidence["verification"]
    assert head.patch["op"] == "float64" and verification["skipped_exports"], verification
    assert all(t.patch.spec["op"] != "reexport" for t in explained(*form)[4].trials)


@pytest.mark.parametrize("form", params({("batch_prototypes", "torchscript"): None}, set()))
def test_a_dynamic_batch_cdist_names_the_call_and_keeps_the_batch_dynamic(explained, form):
    """The lowering named is torch's cdist, the fix is the static size (not "dynamic shapes"), and the repaired file
    still runs at another batch size."""
    import numpy as np
    import onnxruntime as ort

    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.explain.causes.deliver.source_fix import source_fixes
    from drifttui.core.onnx.graph import full_model

    _, _, run, _, exp = explained(*form)
    head = exp.findings[0]
    assert "aten.cdist" in head.message and "static" in head.fix and "dynamic shapes" not in head.fix, head.fix
    fixed = repair(full_model(run.prepared.index), exp)
    code = source_fixes(fixed.applied, exp.findings, 20, "torchscript")[0][0]
    assert "dynamic_axes=None" in code and "opset_version" not in code, code     # what changed: the sizes
    session = ort.InferenceSession(fixed.model.SerializeToString(), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    assert session.run(None, {name: np.zeros((4, 32), np.float32)})[0].shape[0] == 4


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TORCH_ROUNDING]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep


@pytest.mark.parametrize("form", params({("batch_prototypes", "torchscript"): None}, set()))
def test_a_repaired_dynamic_cdist_above_25_rows_is_told_as_torchs_own_rounding(explained, form, tmp_path):
    """Issue 30's known gap (session 33): the repaired file computes the direct difference at every batch size; above
    25 rows torch's CPU ``cdist`` takes the matrix-product route, whose float32 cancels (1e-3 relative off the float64
    value; the file's direct route is 1e-7 off it).  ``check`` at 64 rows then fails, as it does on the user's own file
    (its matrix product rounds otherwise than torch's): no file computes torch's float32 rounding there.  What drifttui
    must say of it is the truth: ``stability``, torch's own float32 error, verified in float64, nothing to repair."""
    import dataclasses

    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model
    from drifttui.core.onnx.io import save_model
    from tests.causes.conftest import explained_run

    engine, cfg, run, _, exp = explained(*form)
    fixed = repair(full_model(run.prepared.index), exp)
    assert engine.recheck(cfg, fixed.model).verdict == "ok"                    # at the sample's 6 rows
    path = save_model(fixed.model, tmp_path / "fixed.onnx")
    wide = dataclasses.replace(cfg, onnx=str(path), inputs=cfg.inputs.replace(":rows_inputs", ":rows64_inputs"))
    _, _, _, result, told = explained_run(wide)
    assert result.verdict == "drift" and result.drift_origin.module == ORIGIN
    head = told.findings[0]
    assert head.check == "stability" and head.verified and head.patch["op"] == "float64", head.message
    assert "torch's own float32 result" in head.message and head.torch_op == "torch.cdist", head.message
