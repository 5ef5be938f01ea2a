"""Held-out batch Y for issue 30 (tests/causes/forms40y.py): a blind first run on attention-masking, selection and
cumulative forms nobody here has tuned on, with torch 2.13 / ONNX Runtime 1.32, after grepping every earlier suite
(forms40y's docstring lists what was screened and matched, or drifts in a form the suites hold).  Screening (about
30 minutes, some 90 exports) found one new mechanism: **both exporters lower ``torch.diagonal`` as a product with an
identity mask summed over a row** (TorchScript's ``symbolic_opset13.diagonal``, torchlib's ``aten_diagonal``:
``ReduceSum(Transpose(x) * EyeLike(k=offset))``), so an off-diagonal ``-inf`` makes the diagonal NaN (``0 * inf``)
where torch's strided view reads only the diagonal.  It is kept in four real-code forms of -inf-masked
log-probabilities (three in deep models of 19-20 module calls).  What a right answer is, by mechanism (written
before the first run's causes were read; /tmp/heldY/judge.md of session 37):

* every pair (both exporters): origin ``body``; ``lowering`` of torch's ``diagonal`` (the identity-mask product),
  verified by a patch that removes the NaN at the diagonal's ``Mul`` (a selection, or a 0-guard there), repairable;
  NOT ``stability`` (-inf is exact on both sides), NOT ``dtype``, NOT the lowering of ``log_softmax`` /
  ``masked_fill`` / ``arange`` (their values are torch's), NOT the ``cumsum`` of ``hmm_stay`` (it carries the NaN),
  NOT the unverified ``op-compat`` fallback;
* "told": the headline says the diagonal is a product with an identity mask and that ``0 * inf`` is NaN (not only
  "torch defines singular points as 0");
* controls: ``ntxent_positive_min`` (the self-pairs masked with ``finfo.min``), ``self_attention_open`` (no causal
  mask), both exporters: no origin, no error finding, nothing to repair.

First run, engine as on main at 0445fb2 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldY/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with three other
sessions):

| pair | origin | class by mechanism | verified | told | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| ntxent_positive torchscript (deep) | right | **no**: ``nonfinite_guard`` on the ``masked_fill``'s ``Constant`` -inf ("in torch's masked_fill ...; torch defines the singular points as 0") | yes, by the wrong patch (the self-pairs filled with 0: exp(0) moves a row's logsumexp at temperature 0.1 by ~1e-5, inside the tolerance) | no | yes, by the wrong patch (1.6e-6) | 9 s / 13 s |
| ntxent_positive dynamo (deep) | right | ``lowering`` of ``aten.diagonal`` named, **not verified** ("no patch among 10 tried removed it") | **no** | no | **no** ("cannot repair the file", exit 4) | 30 s / 32 s |
| self_attention torchscript (deep) | right | yes: ``lowering``, "in torch's diagonal (...; ONNX Mul, ReduceSum)", ``nonfinite_guard`` on the diagonal's ``Mul`` | yes | no ("torch defines the singular points ... as 0") | yes | 19 s / 14 s |
| self_attention dynamo (deep) | right | named, **not verified** (10 tried) | **no** | no | **no** (exit 4) | 40 s / 27 s |
| previous_token torchscript (shallow) | right | yes: ``lowering``, ``nonfinite_guard`` on the diagonal's ``Mul`` (no torch op named) | yes | no | yes | 22 s / 20 s |
| previous_token dynamo (shallow) | right | named, **not verified** (11 tried) | **no** | no | **no** (exit 4) | 24 s / 21 s |
| hmm_stay torchscript (deep) | right | **no**: "in torch's **arange** (...)", ``nonfinite_guard`` on the diagonal's ``Mul`` | yes | no | yes | 17 s / 12 s |
| hmm_stay dynamo (deep) | right | named, **not verified** | **no** | no | **no** (exit 4) | 37 s / 30 s |
| controls: ntxent_positive_min, self_attention_open, both exporters | ok, no error finding, no warning, nothing to repair | | | | | 13-33 s / 8-17 s |

First run: origin 8/8; class by mechanism and verified 2/8; told 0/8; repair passing ``check`` 4/8 (one by a
patch that is not the mechanism); controls 4/4 clean.  6 of the 8 drifting pairs sit in deep models.

Why the misses (what decided it):
* dynamo (4/4 unverified): the FX localisation names ``aten.diagonal`` and its nodes (``ConstantOfShape, EyeLike,
  Mul, ReduceSum, Slice``), so the guard went on the group's last node (the ``Slice``) with torch's one value there,
  and torch's diagonal holds many values: 0 is not it.  The zero-term guard (``singular._zero_terms``, forms34's
  ``beta=0``) wants a constant all-zero operand; the ``EyeLike`` is computed and holds ones.  No re-export helps:
  both exporters lower ``diagonal`` so, and torch's core ATen decompositions keep ``aten.diagonal``.
* TorchScript: no FX record, so the guard went on the first node that makes NaN or inf out of inputs that hold
  none: in three forms the diagonal's ``Mul``, told as a singular point torch defines as 0 (not what happens: the
  selection multiplies unselected -inf by 0); in ``ntxent_positive`` the ``masked_fill``'s ``Constant`` -inf itself
  (no inputs, so "none held inf"), which ranks first as the localisation's first divergent node and passed the
  tolerance by luck.  ``hmm_stay``'s op is named ``arange`` by the alignment (the ``allowed`` mask built from
  ``arange`` is folded into one constant: no value of the call's is in the file).
* Fixed generically: ``propose/edits/mask_select.py`` (tried before the guards): a ``Mul`` of the origin (of the FX
  group when named) whose one operand holds only 0 and 1 and whose other operand holds inf or NaN where that mask is
  0 is rewritten as a selection, ``Where(mask == 0, 0, x * mask)`` (``onnx/edit/lowerings/mask_select.py``), told
  as "selects elements by multiplying with an identity mask (EyeLike: the exporters' lowering of torch.diagonal,
  ReduceSum(x * EyeLike)) ... 0 * inf is NaN"; the mask must be structure (constants and the inputs' shapes), not
  data (a hard 0/1 target weighing ``Log(Sigmoid(x))`` is the stable form's story: without that rule forms40j's
  TorchScript focal loss took ``mask_select`` first); and ``singular._guarded`` no longer guards a node whose inputs are
  all constants (a Constant's -inf is the model's own number).  ``test_mask_select.py``: a bare graph (proposed,
  applied: torch's diagonal exactly, a selected -inf kept), a 0.5 weight and a constant 0 left to other stories,
  finite values left alone, a TorchScript-style Constant -inf fill not guarded, and a small model with both
  exporters verified and repaired by ``mask_select`` (each failed before the fix).

* The alignment by value (``locate/align_graph``) named the wrong torch call for two TorchScript files, fixed
  generically (``test_forward_constants.py``): ``hmm_stay``'s ``torch.arange(8)`` (a constant of the forward) was
  "found" at the diagonal lowering's column indices, computed after the masked scores, so ``causal`` dropped the
  ``masked_fill`` and ``log_softmax`` values and the drift was told "in torch's arange": an input computed from no
  input of the module now contradicts nothing.  ``ntxent_positive``'s diagonal had no nodes (``closest`` took the
  lowering's int64 window of its shape, a constant nearer to torch's values than the NaN diagonal, whose value
  TorchScript picks inside an ``If`` whose branch reads the sums): a call computed from the module's inputs is now
  held by a value computed from the case's feeds (not through their shapes alone), and an If's branches' outer
  reads are its inputs; it was told "in torch's cat".

After the fixes (same harness, /tmp/heldY/out2, engine at 6488b91): origin 8/8; class by mechanism and verified 8/8
(``lowering``, "in torch's diagonal (torch.Tensor.diagonal, aten.diagonal.default; ONNX Mul, ReduceSum)" or, dynamo,
"Mul node_Mul_29 in the lowering of torch's aten.diagonal.default selects elements by multiplying with an identity
mask (EyeLike: the exporters' lowering of torch.diagonal, ReduceSum(x * EyeLike)): ... 0 * inf is NaN", the local
error inf -> 0 .. 9.5e-7; ``ntxent_positive``'s two diagonals by one ``sequence`` of two ``mask_select``); told
8/8; repair passing ``check`` 8/8 (max abs 4.5e-8 .. 5.7e-6); controls 4/4 clean; diagnose / repair 16-51 s / 11-43 s
(the machine shared with three other sessions' runs).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_SELECT = ("lowering", "rewrite", {"rewrite": "mask_select"}, "identity mask (EyeLike")
_BOTH = ("lowering", "sequence", {}, "identity mask (EyeLike")        # two diagonals of one matrix, selected together
FORMS = ("self_attention", "previous_token", "hmm_stay")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {**{(f, e): _SELECT for f in FORMS for e in ("torchscript", "dynamo")},
            **{("ntxent_positive", e): _BOTH for e in ("torchscript", "dynamo")}}
CLEAN = [(f, e) for f in ("ntxent_positive_min", "self_attention_open") for e in ("torchscript", "dynamo")]
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40y")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_the_held_out_forms_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)
    assert "torch's diagonal" in explained(*form)[4].findings[0].message      # the call torch made, not arange / cat


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)
    assert [f for f in explained(*form)[4].findings if f.severity == "warning"] == []


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
