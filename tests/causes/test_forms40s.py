"""Held-out batch S for issue 30 (tests/causes/forms40s.py): a blind first run on arithmetic, distance and loss forms
nobody here has tuned on, screened from upstream threads and exporter / ONNX Runtime sources after grepping every
earlier suite, with torch 2.13 / ONNX Runtime 1.32 (forms40s's docstring lists what was screened and matched, or
drifts in a form the suites hold).  Screening (35 minutes, twenty rounds) found almost every op-level drift of these
families held by an earlier suite; what it found beyond them is one exporter behaviour with four faces: the dynamo
exporter's ONNX optimizer drops a ``+ eps`` of at most 1e-8 (onnxscript's ``x + 0`` no-op rule matches constants
within 1e-8 of 0).  Its one earlier form, forms36's ``poisson_eps``, went through a non-finite guard valued log(eps);
here the file's values are finite (``distill_ce``, ``step_cosine``), or finite and not in one place (``log_power``),
so the batch measures whether the engine tells the dropped addend or only the op that reads the bare value.  Three
of the four pairs sit in deep models (20 module calls).  What a right answer is, by mechanism (written before the
first run's causes were read; /tmp/heldS/judge.md of session 35):

* every pair (dynamo; the TorchScript file keeps the Add and matches torch): ``lowering`` (the export), verified by
  putting the ``Add`` of torch's constant back or by a re-export of ``body`` that keeps it; NOT ``stability`` (the
  float64 of the file's graph keeps the bare value), NOT a guard alone where the values are finite
  (``log_power``: the guard of the -inf leaves the near-silent channels 7 off).  The words a right answer says: the
  export dropped torch's ``+ eps``; the op that reads the bare value (Log, Div, Reciprocal) is lowered right.

First run, engine as on main at b49f789 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldS/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with four other
sessions):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| distill_ce dynamo (deep, loss) | right | ``lowering`` by a TorchScript re-export of body, but the words blame the op: "the exporter's lowering of torch's aten.log.default is wrong" | yes | yes (the re-export grafted) | 25 s / 23 s |
| step_cosine dynamo (deep, distance) | right | ``lowering`` by the re-export, "the lowering of aten.div.Tensor is wrong" | yes | yes | 21 s / 21 s |
| idw_interp dynamo (shallow, distance) | right | ``lowering`` by a guard, "torch defines the singular points (0/0, ...) as 1e+08": a singular-point story, not the dropped ``+ 1e-8`` | yes | yes (the guard) | 12 s / 12 s |
| log_power dynamo (deep, arithmetic) | right | ``lowering`` by the re-export (the guard of the -inf alone did not verify), "the lowering of aten.log.default is wrong" | yes | yes | 19 s / 18 s |
| controls: distill_ce_mild dynamo, step_cosine_unit dynamo, distill_ce torchscript, step_cosine torchscript | ok, no error finding | | | | 16 s, 17 s, 18 s, 13 s |

First run: origin 4/4; class (``lowering``) and verified 4/4, with the mechanism told 0/4 (each story names the op
that reads the bare value, or a singular point); repair passing ``check`` 4/4; controls 4/4 clean.

Why the misses (what decided it): the engine had no story for a constant the file lost *between* two nodes.  The
FX localisation names the first node over the tolerance fed torch's inputs (the Log, Div or Reciprocal: fed torch's
bare value it cannot reproduce torch's output), and the counterfactuals that verify (a re-export of the module, a
guard with torch's one value at the non-finite points) say nothing of what the re-export kept.  forms36's
``poisson_eps`` was answered the same way (a guard valued log(eps)).

Fixed generically (``propose/edits/dropped_addend.py``, ``onnx/edit/lowerings/dropped_addend.py``): the origin's FX
program (``locate/fx_localise``) now keeps the numbers torch's graph adds (``aten.add`` / ``aten.sub`` of a number,
``locate/torch_program.addends``); each that no one-element constant of the file holds (to float32's rounding,
relative: 1e-10 is not 0) is tried as an ``Add`` before each computed input of the FX-named wrong node, before the
singular-point guards; the story says the export dropped the addend and the fix names ``optimize=False`` or an eps
above 1e-8.  Patch keys now include the input position (``assemble.key``: the two inputs of one Div are two
patches).  Tested on a small model in ``test_dropped_addend.py`` (``log(relu(x) * gain + 1e-10)``, which failed
before the fix: the guard valued log(1e-10) verified first).

After the fix (same harness, /tmp/heldS/run2): origin 4/4; class, verified and the mechanism told 4/4 (``lowering``,
``dropped_addend``: ``+ 1e-10`` before the Log of ``distill_ce`` / ``log_power``, ``+ 1e-08`` before the
Reciprocal of ``idw_interp`` and before the Div's denominator of ``step_cosine``); repair passing ``check`` 4/4 (the
Add put back); controls 4/4 clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params)


def _addend(value: float) -> tuple:
    return ("lowering", "rewrite", {"rewrite": "dropped_addend", "value": value}, "the export dropped the addend")


# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("distill_ce", "dynamo"): _addend(1e-10), ("step_cosine", "dynamo"): _addend(1e-8),
            ("idw_interp", "dynamo"): _addend(1e-8), ("log_power", "dynamo"): _addend(1e-10)}
CLEAN = [("distill_ce_mild", "dynamo"), ("step_cosine_unit", "dynamo"), ("distill_ce", "torchscript"),
         ("step_cosine", "torchscript")]
FAST: set = set()
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40s")


@pytest.mark.parametrize("form", params(REPAIRED, FAST))
def test_the_held_out_forms_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
