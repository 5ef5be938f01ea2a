"""Held-out batch Z for issue 30 (tests/causes/forms40z.py): a blind first run on forms nobody here has tuned on,
from a fresh angle, **the opsets users pin** (``torch.onnx.export(..., dynamo=False, opset_version=11)``, as for
TensorRT or an older runtime), after grepping every earlier suite, with torch 2.13 / ONNX Runtime 1.32 (forms40z's
docstring lists what was screened and matched, or drifts in a form the suites hold).  Screening (35 minutes) found
two mechanisms of the TorchScript exporter's opset-11 symbolic functions, each exact at opset 12 and with the dynamo
exporter: ``>=`` / ``<=`` lowered as ``Not(Less)`` / ``Not(Greater)`` (true for NaN), and integer ``Max`` / ``Clip``
/ ``Pow`` computed through a float32 Cast.  Four forms, three in deep models (20 and 21 module calls).  What a right
answer is, by mechanism (written before the first run's causes were read; /tmp/heldZ/judge.md of session 38):

* ``depth_fill`` (deep, TorchScript at opset 11): a depth fusion's 0 / 0 holes kept by ``(d >= near) & (d <= far)``:
  ``lowering`` of ``aten.ge`` / ``aten.le`` (``Not(Less)``, ``Not(Greater)``: true for NaN), verified by a comparison
  false on NaN or a re-export at opset >= 12; NOT the 0 / 0 ``Div`` (torch makes that NaN too), NOT ``stability``;
* ``nan_target_loss`` (deep, TorchScript at opset 11): a masked MSE whose unrated targets (0 / 0) pass
  ``target >= 0``: the same answer;
* ``time_gaps`` (deep, TorchScript at opset 11): ``torch.maximum`` of int64 ms timestamps: ``lowering`` of
  ``aten.maximum`` (opset 11's ``Max`` has no int64: the exporter computes it in float32, exact only to 2**24),
  verified by an int64 ``Max`` / a re-export at opset >= 12; NOT the user's Embedding or ``// 1000``;
* ``pair_hash`` (shallow, TorchScript at opset 11): Szudzik pairing ``a ** 2 + a + b`` of int64 ids, then ``% 997``:
  ``lowering`` of ``aten.pow`` (opset 11's ``Pow`` has no integer type: float32, no Cast back); NOT forms39's ONNX
  Runtime integer ``Pow`` through double past 2**53 (these values are under 2**41).

First run, engine as on main at 3866b03 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldZ/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with four other
sessions).  "told": the story says the mechanism in words (the NaN through ``Not(Less)``; the integer op in float32
at the pinned opset), not only a class that scores right:

| pair | origin | class by mechanism | verified | repair passes check | told | diagnose / repair |
|---|---|---|---|---|---|---|
| depth_fill torchscript@11 (deep) | right | **no**: ``lowering`` of torch's ``div``, "Div makes NaN or inf that torch's body never has: torch defines 0/0 as 0" (false: torch's fused depth is NaN there too); the guard verifies for another reason (a 0 in place of the NaN falls outside [near, far]) | yes (another reason) | yes (the guard) | no | 10 s / 9 s |
| nan_target_loss torchscript@11 (deep) | right | yes: ``lowering``, "in torch's ge (aten.ge.Scalar; ONNX Less)", the dynamo re-export | yes | yes (the file moved to opset 20) | partly (the op, not the NaN nor ``Not``) | 14 s / 16 s |
| time_gaps torchscript@11 (deep) | right | yes: ``lowering`` (but the node named is "Cast /body/Cast_2 computes something else than torch", no ``maximum``) | yes (dynamo re-export) | yes (opset 20) | no | 18 s / 22 s |
| pair_hash torchscript@11 (shallow) | right | yes: ``lowering``, "in torch's pow (aten.pow.Tensor_Scalar; ONNX Cast, Pow)" | yes (dynamo re-export) | yes (opset 20) | partly (the op and its Cast, not float32 at opset 11) | 11 s / 11 s |
| controls: depth_fill_dense, time_gaps_rel, pair_hash_small (torchscript@11), depth_fill, time_gaps (dynamo) | ok, no error finding | | | | | 10-16 s |

First run: origin 4/4; class by mechanism and verified 3/4; told 0/4 (2/4 partly: the op named); repair passing
``check`` 4/4 (one by a story that is not the mechanism, and three by moving the user's opset-11 file to opset 20:
the deployment that pinned opset 11 cannot load it); controls 5/5 clean.  3 of the 4 pairs sit in deep models.

Why the misses (what decided it):
* No patch computed a non-strict comparison as torch does on NaN: the first NaN producer (a ``Div`` of 0 by 0) got
  ``singular``'s ``nonfinite_guard``, whose story assumes torch defines the point, and it verified because the 0 it
  puts there is outside the mask's range.  ``nan_target_loss`` reached the re-exports only because its 0 / 0 guard
  (0 >= 0 is true) keeps the wrong row.
* The re-exports of a user's file are today's dynamo and TorchScript exporters at their newest opsets: the first
  verifies, the fix says "dynamo at opset 20" and ``repair`` grafts an opset-20 export, so the story never says what
  the pinned opset computes otherwise, and the repaired file leaves the opset the user pinned.
* Fixed, generically: ``onnx/edit/lowerings/nan_compare.py`` rewrites ``Not(Less(a, b))`` / ``Not(Greater(a, b))`` of
  floats as ``Or(Greater | Less, Equal)`` at the file's own opset, proposed (``propose/edits/nan_compare.py``, before
  the guards) where the comparison's inputs hold NaN that the negation turned true (``test_nan_compare.py``, on a
  real opset-11 export); and ``propose/reexport/variants.next_opset`` tries the file's TorchScript exporter one opset
  above a pinned file's first, whose verified story tells the integer ops the pinned opset computes through a float
  Cast (``propose/reexport/pinned_opset.py``, ``test_pinned_opset.py``).

After the fix (same harness, /tmp/heldZ/run5): origin 4/4, class by mechanism and verified 4/4 (``nan_compare`` on
both NaN forms, told: "Not(Less(a, b)) / Not(Greater(a, b)) is true where a or b is NaN ... at opset 11"; the
TorchScript re-export at opset 12 on both integer forms, told: "at opset 11 the torchscript exporter computes
integer values through a float Cast (Max in float32 ...)"), told 4/4, repair passing ``check`` 4/4 with the file
kept at opset 11 (the rewrite) or raised to 12 only; fix: ``opset_version=12``; controls 5/5 clean.  Diagnose /
repair: depth_fill 19 s / 18 s, nan_target_loss 26 s / 22 s, time_gaps 41 s / 37 s (one more re-export, the
opset-12 one, before it; a load average of 7 on the 2 cores), pair_hash 16 s / 14 s.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params)

_NAN = ("lowering", "rewrite", {"rewrite": "nan_compare"}, "is true where a or b is NaN")
_MAX = ("lowering", "reexport", {"exporter": "torchscript", "opset": 12}, "Max in float32")
_POW = ("lowering", "reexport", {"exporter": "torchscript", "opset": 12}, "Pow in float32")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("depth_fill", "torchscript"): _NAN, ("nan_target_loss", "torchscript"): _NAN,
            ("time_gaps", "torchscript"): _MAX, ("pair_hash", "torchscript"): _POW}
CLEAN = [("depth_fill_dense", "torchscript"), ("time_gaps_rel", "torchscript"), ("pair_hash_small", "torchscript"),
         ("depth_fill", "dynamo"), ("time_gaps", "dynamo")]
ORIGIN = "body"
INPUTS = {"depth_fill": "depth_inputs", "depth_fill_dense": "depth_dense_inputs", "nan_target_loss": "target_inputs",
          "time_gaps": "timestamp_inputs", "time_gaps_rel": "relative_inputs", "pair_hash": "id_inputs",
          "pair_hash_small": "small_id_inputs"}


def _pinned(model: str, exporter: str) -> dict:
    """The user's export call: the TorchScript exporter pinned at opset 11, the dynamo exporter at its default."""
    return {"opset_version": 11} if exporter == "torchscript" else {}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40z", inputs=INPUTS, export=_pinned)


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
