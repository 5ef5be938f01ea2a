"""Held-out batch V for issue 30 (tests/causes/forms40v.py): a blind first run screened from the sources of
onnxscript's torchlib lowerings of the arithmetic, integer-conversion and attention-masking ATen ops, with torch
2.13 / ONNX Runtime 1.32 (forms40v's docstring lists what was screened and matched).  What the screen found beyond
the held mechanisms: **the file holds a Python number of a float64 op at float32 precision** (the dynamo exporter's
``aten.scalar_tensor`` lowering casts a float32 constant to double: 0.1 is 0.10000000149011612; TorchScript's
``round(decimals=)`` writes ``10 ** d`` in float32), amplified where float64 holds what float32 cannot (Unix times,
GPS fixes).  Three of the four pairs sit in deep models (20 module calls).  What a right answer is, by mechanism
(written before the first run's causes were read; /tmp/heldV/judge.md of session 36):

* every drifting pair: origin ``body``; ``dtype`` (the precision the number is held in), naming the constant the
  file holds and torch's number, verified by the number restored in double; repairable.  NOT ``stability`` (the
  file is float64 already), NOT an ONNX Runtime kernel, NOT ``fmod_floor`` (``time_bucket``'s values are not on
  multiples).  A re-export of ``body`` by the other exporter verifies too, but says nothing of the number: counted
  as verified and repaired, not as the class by mechanism (forms40q's rule).

First run, engine as on main at eef8958 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldV/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with other
sessions):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| time_of_day dynamo (deep) | right | no: ``lowering`` by a TorchScript re-export of body, "in torch's sin ... the dynamo exporter's lowering of body's torch calls computes otherwise than torch" | yes | yes (the re-export grafted) | 28 s / 22 s |
| time_bucket dynamo (deep) | right | no: ``lowering`` by the re-export, blaming ReduceSum ``node_sum_1`` ("the exporter's lowering of torch's aten.sum.dim_IntList is wrong") | yes | yes | 29 s / 24 s |
| geo_offset dynamo (shallow) | right | no: ``lowering`` by the re-export, "Add node_add_1 ... compute(s) add less accurately than torch ... the lowering of aten.add.Tensor is wrong" (a right node, not the number) | yes | yes | 21 s / 29 s |
| bucket_offset torchscript (deep) | right | no: ``lowering`` by a dynamo re-export, "Sub /body/Sub computes something else than torch" | yes | yes | 36 s / 21 s |
| controls: time_of_day_relative dynamo and torchscript, time_of_day / time_bucket / geo_offset torchscript, bucket_offset dynamo | ok, no error finding | | | | 10-18 s |

First run: origin 4/4; class by mechanism 0/4 (each story a re-export by the other exporter, blaming the op whose
node reads the number or one downstream of it: ``sin``, ``sum``, ``add``, ``sub``); verified 4/4; repair passing
``check`` 4/4 (the re-export grafted); controls 6/6 clean.

Why the misses (what decided it): no proposer compared a float64 constant with torch's number.  The functional
constants (``propose/edits/constants.py``) call a constant torch's when it is within 1e-6 relative of the FX call's
number (0.10000000149 is 1.5e-8 from 0.1), and a dynamo node's FX call reads ``%scalar_tensor_default``, not a
number; ``opmath_scalar`` reads only float16 / bfloat16 constants.  With no patch tried ("trying up to 0 candidate
patch(es)"), the re-exports were the first to verify.

Fixed generically (``propose/numerics/double_scalar.py``): a one-element float64 constant an arithmetic node of the
origin reads that float32 holds exactly is compared with torch's numbers for it (the FX call's, the origin's torch
program's calls of the same ATen op and of ``aten.scalar_tensor``, then the shortest decimal of the float32 value,
for a file with no program of the number), and each that rounds to it in float32 and is not it is tried as the
node's input in double (``replace_constant``; every such constant of the origin at once first, a ``sequence``).
Class ``dtype``.  Tested on a hand-made graph and on one-line exports in ``test_double_scalar.py``.

After the fix (same harness, /tmp/heldV/out2): origin 4/4; class by mechanism and verified 4/4 (``dtype``:
``replace_constant`` of 2 * pi, of 0.1 twice, a ``sequence`` of the four GPS numbers); repair passing ``check`` 4/4
(the numbers written in double); seconds 13-25 s / 14-23 s.

Held out after the fix (written after it, first run /tmp/heldV/out3): ``held_session_phase`` (deep), the phase
within the second of times since a session start written in the code, ``torch.remainder(t.clamp(min=START) -
START, 1.0)`` with ``START = 1_700_000_000.25``.  Its first run missed: origin right, ``lowering`` by the TorchScript
re-export ("Sub node_sub ... the exporter's lowering of torch's aten.sub.Tensor is wrong"), verified, repaired
(34 s / 27 s); its TorchScript file clean.  Why: the dynamo optimizer shares one initializer between the times'
float64 base buffer (1.7e9) and the start rounded to float32 (the same 1700000000.0), so the ``sequence`` restored
the buffer's ``Add`` too and failed, and no single restored node removed the drift.  Fixed: in a dynamo file a
constant counts only for a node whose FX call takes a Python number (inline or ``%scalar_tensor``), not a buffer
(``test_double_scalar.py``'s shared initializer).  After (/tmp/heldV/out4): ``dtype``, a ``sequence`` restoring the
start at the ``Max`` and the ``Sub`` only, verified, repair passing ``check`` (23 s / 22 s); the four forms above
unchanged.
"""
from __future__ import annotations

import math

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params)

_HELD = "held at float32 precision"

# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("time_of_day", "dynamo"): ("dtype", "replace_constant", {"value": 2 * math.pi}, _HELD),
            ("time_bucket", "dynamo"): ("dtype", "replace_constant", {"value": 0.1}, _HELD),
            ("geo_offset", "dynamo"): ("dtype", "sequence", {}, _HELD),
            ("bucket_offset", "torchscript"): ("dtype", "replace_constant", {"value": 0.1}, _HELD),
            ("held_session_phase", "dynamo"): ("dtype", "sequence", {}, _HELD)}
CLEAN = [("time_of_day_relative", "dynamo"), ("time_of_day_relative", "torchscript"),
         ("time_of_day", "torchscript"), ("time_bucket", "torchscript"), ("geo_offset", "torchscript"),
         ("bucket_offset", "dynamo"), ("held_session_phase", "torchscript")]
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40v")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
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
