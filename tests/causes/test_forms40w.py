"""Held-out batch W for issue 30 (tests/causes/forms40w.py): a blind first run on loss, distance and cumulative forms
screened from the sources of the TorchScript exporter's symbolic functions and torchlib's lowerings, with torch 2.13
/ ONNX Runtime 1.32, after grepping every earlier suite (forms40w's docstring lists what was screened and matched,
or drifts in a form the suites hold).  Screening (about 25 minutes) found one new mechanism, in the TorchScript
exporter's ONNX peephole rather than in a symbolic: ``fuseLogSoftmaxNllLoss`` rewrites ``LogSoftmax -> [Transpose ->]
NegativeLogLikelihoodLoss`` into one ``SoftmaxCrossEntropyLoss`` (over axis 1) without reading the LogSoftmax's
axis, and in its Transpose branch reads the input of the node before the LogSoftmax.  It is kept in four real-code
forms (three in deep models of 20-22 module calls); each form's dynamo file and two control forms are clean.  What a
right answer is, by mechanism (written before the first run's causes were read; /tmp/heldW/judge.md of session 36):

* ``clip_nll`` / ``token_nce`` / ``pointer_nll`` (deep, TorchScript): origin ``body``; ``lowering`` of torch's
  ``log_softmax`` + ``nll_loss`` (the fusion), verified by the dynamo re-export of ``body`` (or un-fusing the SCE),
  repairable; NOT ``stability`` / ``dtype`` / an ONNX Runtime kernel story / the unverified ``op-compat`` fallback;
  for ``pointer_nll`` NOT a story of the skipped ``div`` alone (putting it back leaves the axis wrong);
* ``implicit_nll`` (shallow, TorchScript): ``nn.LogSoftmax()`` (implicit dim 0) has no ONNX node: its computation went
  into ``body.nll``'s SCE; origin ``body.logsoftmax`` (issue 30 point 6: the member of the unit whose own torch
  computation differs; ``body.nll``, the consumer, is a near miss), ``lowering`` of ``log_softmax``, repairable;
* controls: each form's dynamo file, ``clip_nll_t`` and ``token_nce_col`` with both exporters: no origin, no error
  finding, no false warning, ``repair`` writing nothing.

First run, engine as on main at eef8958 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldW/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with three other
sessions):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| clip_nll torchscript (deep) | right | yes: ``lowering``, "in torch's log_softmax (... ONNX SoftmaxCrossEntropyLoss ...)" | yes (dynamo re-export of ``body``: 0.107 -> 4.8e-7) | yes | 27 s / 19 s |
| token_nce torchscript (deep) | right | yes: ``lowering``, torch's ``log_softmax`` | yes (0.197 -> 2.4e-7) | yes | 28 s / 22 s |
| pointer_nll torchscript (deep) | right | **no**: ``lowering`` of the SCE node, but "in torch's **div**" (the scale the fusion skipped) | yes (0.531 -> 0) | yes | 27 s / 24 s |
| implicit_nll torchscript (shallow) | right (``body.logsoftmax``, through an orphan Identity) | yes: ``lowering``, torch's ``log_softmax`` | yes, locally (5.03 -> 2.4e-7) | **no**: "check on the repaired copy: drift at body.nll" (exit 1) | 14 s / 13 s |
| controls: clip_nll, token_nce, pointer_nll, implicit_nll dynamo; clip_nll_t, token_nce_col torchscript and dynamo | ok, no error finding, no warning, nothing to repair | | | | 10-22 s / 6-9 s |

First run: origin 4/4; class by mechanism and verified 3/4; repair passing ``check`` 3/4; controls 8/8 clean.  3 of
the 4 drifting pairs (and 6 of the 8 control pairs) sit in deep models.

Why the misses (what decided it):
* ``pointer_nll``: the alignment by value (``locate/torch_align.py``) names the first torch call the file does not
  hold whose inputs it holds.  The fused SCE reads the scores from before the ``div``, so no value of the ``div``'s is
  in the file, and neither of the ``log_softmax``'s or ``transpose``'s: the ``div`` was named, though nothing lowers
  it wrong (its node is gone with the fusion).  Fixed generically (``locate/align_graph.fused_into``): a call with no
  value of its shape in the file after its inputs', and a later call computed from it through calls the file never
  holds whose value a node makes *from the first call's inputs*, is that fused node's: the later call is named
  (``nll_loss``, ONNX ``SoftmaxCrossEntropyLoss``).  A lowering that makes a value of another shape, or a later node
  that does not read the call's inputs, keeps the call named (``test_fused_call.py``: a bare graph both ways, and a
  small TorchScript pointer loss).  ``clip_nll`` and ``token_nce`` are then told by ``nll_loss`` too (their ONNX
  nodes: the SCE alone, where the log_softmax's group listed the Add, Unsqueeze, Mul after it).
* ``implicit_nll``: ``prepare/plan/orphans.py`` takes a module with no node whose consumer reads a value of its
  output's shape for a computation the exporter *dropped* (an in-place update lost through a view) and stands an
  Identity for it between that value and the consumer; here the consumer *absorbed* it (the SCE computes log_softmax
  and NLL).  The dynamo re-export of ``body.logsoftmax`` grafted in the Identity's place verified on the Identity's
  value, but the SCE then took a second log-softmax of it: the copy drifted at ``body.nll`` (a second ``repair`` of
  the copy re-exported ``body.nll`` and passed).  Fixed generically (``locate/case._absorbed_orphan``): an orphan
  whose consumer drifts on its own too (fed torch's value, the consumer's nodes do not compute torch's consumer: they
  compute the orphan's function as well; a dropped update leaves a consumer that is right on right values) is
  compared with its consumer as one unit, as ``prepare/unit_members.py``'s members are: the case is the nearest
  compared call holding both (``body``), its nodes theirs too, and that call's re-export is verified and grafted
  (``test_absorbed_orphan.py``: ``nn.LogSoftmax(dim=2)`` then ``nn.NLLLoss`` on a small model; the in-place forms of
  ``test_forms_inplace.py`` unchanged).

After the fixes (same harness on all 12 pairs, /tmp/heldW/out4): origin 4/4, class by mechanism and verified 4/4
(``clip_nll``, ``token_nce``, ``pointer_nll``: "in torch's nll_loss (torch.nn.functional.nll_loss,
aten.nll_loss.default; ONNX SoftmaxCrossEntropyLoss)"; ``implicit_nll``: "body.logsoftmax (no ONNX value of its own:
compared as one unit with the call that absorbed it, inside body ...): in torch's log_softmax (...)", verified by the
dynamo re-export of ``body``, 2.35 -> 6e-8), repair passing ``check`` 4/4, controls 8/8 clean with no warning;
diagnose / repair 34 s / 34 s, 34 s / 26 s, 22 s / 18 s, 15 s / 21 s for the four, 8-24 s / 5-11 s for the controls
(the machine shared with three other sessions' test runs).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms,
                                     params)

_FUSED = ("lowering", "reexport", {"exporter": "torchscript", "peephole": False},
          "in torch's nll_loss (torch.nn.functional.nll_loss")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
# clip_nll: session 42's torch_align.disowns made the right row term's fused SCE vouch for none of its log_softmax
# (the SCE reads the scores, not the log-probabilities), so that log_softmax was the first call not right and named;
# session 43: a node reading the input's own inputs' values computes the input itself and disowns nothing
_FUSED_POOL = _FUSED[:3] + ("the peephole pass put 2 x SoftmaxCrossEntropyLoss where the lowering has",)
REPAIRED = {("clip_nll", "torchscript"): _FUSED_POOL, ("token_nce", "torchscript"): _FUSED,
            ("pointer_nll", "torchscript"): _FUSED,
            ("implicit_nll", "torchscript"): ("lowering", "reexport", {"exporter": "torchscript", "peephole": False,
                                                                          "module": "body"},
                                              "compared as one unit with the call that absorbed it")}
CLEAN = [(f, "dynamo") for f in ("clip_nll", "token_nce", "pointer_nll", "implicit_nll")] + \
    [(f, e) for f in ("clip_nll_t", "token_nce_col") for e in ("torchscript", "dynamo")]
ORIGIN = {"implicit_nll": "body.logsoftmax"}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40w")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_the_held_out_forms_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN.get(form[0], "body"))


@pytest.mark.parametrize("form", params([("clip_nll", "torchscript")], set()))
def test_a_fused_loss_is_told_by_the_later_call_it_absorbed(explained, form):
    assert_verified_and_repaired(explained, form, _FUSED, "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)
    assert [f for f in explained(*form)[4].findings if f.severity == "warning"] == []


@pytest.mark.drifts
def test_most_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
