"""Held-out batch 46V for issue 30 (tests/causes/forms46v.py): a blind first run on forms nobody here has tuned on,
screened in PROBABILISTIC MODELS AND NORMALIZING FLOWS (``torch.distributions`` heads, mixture density networks,
RealNVP / Glow layers, VAE and evidential heads, float32 and float16 / autocast; forms46v's docstring lists the ~110
exports screened).  The exporters compute what torch computes for nearly all of it; what drifts past the tolerance
is reached through ``torch.distributions.Bernoulli`` (its ``log_prob`` is ``-binary_cross_entropy_with_logits``,
whose ``Log(Sigmoid)`` lowering ONNX Runtime's ``Sigmoid`` tail breaks; from probabilities it reads
``log(p) - log1p(-p)`` of a ``sigmoid`` in its tail) and a RealNVP logit pre-processing under autocast (float16
nodes reading Python scalars in float16, ONNX Runtime's dropped float16 rounding).  What a right answer is (written
before the first run's causes were read; /tmp/h46V/judge.md): the origin ``body``; ``stability`` for the
overflowing ``binary_cross_entropy_with_logits``, ``op-compat`` (an ONNX Runtime kernel) for the ``Sigmoid`` tail read
through ``log(p)``, named by ``torch.sigmoid``, ``dtype`` for the autocast logit; all verified and repaired.

First run, engine at the branch base (75a32626, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h46V/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| bern_logits torchscript (deep) | right | yes: ``stability`` (``Log(Sigmoid)`` as ``-Softplus(-x)``) | yes (``binary_cross_entropy_with_logits``) | yes | yes (OK) | 29 s / 21 s |
| bern_logits dynamo (deep) | right | yes: ``stability`` | yes | yes | yes (OK) | 35 s / 22 s |
| bern_probs torchscript (shallow) | right | yes: ``op-compat`` (ORT's Sigmoid, ``1 / (1 + Exp(-x))`` at both Sigmoids) | **no**: ``binary_cross_entropy_with_logits`` (the patched node is ``torch.sigmoid``'s) | yes | yes (OK) | 16 s / 14 s |
| bern_probs dynamo (shallow) | right | yes: ``op-compat`` | **no**: ``binary_cross_entropy_with_logits`` | yes | yes (OK) | 25 s / 24 s |
| bern_entropy dynamo (deep) | right | yes: ``op-compat`` (``Exp(-Softplus(-x))``) | yes (``binary_cross_entropy_with_logits``, what ``entropy`` calls) | yes | yes (OK) | 31 s / 27 s |
| amp_logit torchscript (deep) | right | yes: ``dtype`` (Python scalars read in float16 + dropped float16 rounding) | yes (``mul``) | yes | yes (WITHIN BUDGET) | 32 s / 34 s |
| amp_logit dynamo (deep) | right | yes: ``dtype`` | yes | yes | yes (WITHIN BUDGET) | 35 s / 38 s |
| controls bern_logits_cool ts + dy, bern_probs_cool ts, bern_entropy ts, amp_logit_f32 dy | ok (5/5) | | | | | 27-43 s |

First run: origin 7/7; class by mechanism 7/7; told 5/7; verified 7/7; repair passing check 7/7; controls 5/5.

Fixed generically: ``causes/locate/forward_record.py`` (an output of a call with several outputs that is a view of
one of its inputs, ``broadcast_tensors``' output i of input i, comes from that input alone: the broadcast labels
the file holds no longer vouch for the logits ``log(p) - log1p(-p)`` they were broadcast with, so the TorchScript
file's first wrong call is ``log``, whose error is ``torch.sigmoid``'s amplified; ``test_broadcast_vouching.py``).
After (the CLI, seed 7, /tmp/h46V/run2): told 6/7, everything else as before
(diagnose / repair 28-78 s / 19-64 s on a machine shared with three other runs).  The last three controls of the
first run started after the fix was written; they were run again on a copy of the base engine (/tmp/h46V/run1base):
ok, 3/3.  Left: ``bern_probs`` dynamo is still told by ``binary_cross_entropy_with_logits``: the dynamo file's op
is its FX localisation's, the first FX node whose own error (fed torch's inputs) passes the tolerance, which is the
loss's ``Log(Sigmoid)``; ``torch.sigmoid``'s own error is below the tolerance in absolute terms and only ``log(p)``
amplifies it (a strict xfail).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

_LOG_SIGMOID = ("stability", "rewrite", {"rewrite": "workaround", "form": "log_sigmoid"},
                "torch's binary_cross_entropy_with_logits")
_SIGMOID_TAIL = ("op-compat", "sequence", {}, "in torch's sigmoid")
_SCALARS = ("dtype", "sequence", {}, "read torch's Python scalars in the tensor's low type")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("bern_logits", "torchscript"): _LOG_SIGMOID, ("bern_logits", "dynamo"): _LOG_SIGMOID,
            ("bern_probs", "torchscript"): _SIGMOID_TAIL,
            ("bern_entropy", "dynamo"): ("op-compat", "sequence", {}, "torch's binary_cross_entropy_with_logits"),
            ("amp_logit", "torchscript"): _SCALARS, ("amp_logit", "dynamo"): _SCALARS}
# told by the FX localisation's first wrong node (the loss's Log(Sigmoid)), not by torch.sigmoid
TOLD_BY_THE_LOSS = {("bern_probs", "dynamo"): _SIGMOID_TAIL}
CLEAN = [("bern_logits_cool", "torchscript"), ("bern_logits_cool", "dynamo"), ("bern_probs_cool", "torchscript"),
         ("bern_entropy", "torchscript"), ("amp_logit_f32", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms46v", seed=7)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_bernoulli_or_flow_drift_is_told_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", missed(TOLD_BY_THE_LOSS, "the dynamo file's op is its FX localisation's first node "
                                        "over the tolerance by its own error: the loss's Log(Sigmoid)"))
def test_the_dynamo_sigmoid_tail_is_told_by_torch_sigmoid(explained, form):
    assert_verified_and_repaired(explained, form, TOLD_BY_THE_LOSS[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TOLD_BY_THE_LOSS]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
