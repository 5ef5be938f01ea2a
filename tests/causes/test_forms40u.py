"""Held-out batch U for issue 30 (tests/causes/forms40u.py): a blind first run screened from the sources of the
rewrite rules that run on every export or session (onnxscript's default rewrite rules and optimizer, ONNX Runtime's
fusions at its default level) rather than from a family, with torch 2.13 / ONNX Runtime 1.32 (forms40u's docstring
lists what was screened and matched).  What the screen found beyond the held mechanisms is one rewrite with three
faces: **the dynamo exporter's optimizer fuses two successive clamps into one Clip whose bounds cross**
(onnxscript's ``_fuse_relus_clips``: ``Clip(Clip)`` and ``Relu(Clip)`` merged with no check that max(lower bounds)
stays under min(upper bounds); openvinotoolkit/openvino#21509 is the same fusion's fix upstream).  Two of the three
pairs sit in deep models (20 module calls).  What a right answer is, by mechanism (written before the first run's
causes were read; /tmp/heldU/judge.md of session 35):

* every drifting pair (dynamo; the TorchScript file keeps two Clips and matches torch): ``lowering`` (the export),
  verified by splitting the Clip back into torch's two clamps or by a re-export of ``body`` that keeps them; NOT
  ``stability`` / ``precision``, NOT "the lowering of aten.clamp (or aten.relu) is wrong" without the fusion.  The
  words a right answer says: the file's Clip has bounds that cross, two clamps fused into one.

First run, engine as on main at 20071ec (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldU/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with other
sessions):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| relu6_range dynamo (deep) | right | ``lowering`` by a TorchScript re-export of body, but the words blame the op: "the exporter's lowering of torch's aten.clamp.default is wrong" | yes | yes (the re-export grafted) | 11 s / 8 s |
| capped_relu dynamo (deep) | right | ``lowering`` by the re-export, "the lowering of aten.relu.default is wrong" | yes | yes | 12 s / 10 s |
| clamp_chain dynamo (shallow) | right | ``lowering`` by the re-export, "the lowering of aten.clamp.default is wrong" | yes | yes | 10 s / 10 s |
| controls: relu6_range_overlap dynamo, relu6_range torchscript, capped_relu torchscript | ok, no error finding | | | | 8 s, 8 s, 9 s |

First run: origin 3/3; class (``lowering``) and verified 3/3, with the mechanism told 0/3 (each story names the op
whose FX node the fused Clip carries); repair passing ``check`` 3/3; controls 3/3 clean.

Why the misses (what decided it): the engine had no story for two torch ops the file holds as one node.  The FX
localisation names the Clip (fed torch's input of the first clamp it cannot give torch's output of the last) and the
re-export of the module verifies, which says nothing of the fused bounds the file holds (the step-3 lines print
them: ``mul_1_min 8``, ``mul_max 6``).

Fixed generically (``propose/edits/crossed_clip.py``, ``onnx/edit/lowerings/crossed_clip.py``): a Clip among the
origin's nodes whose constant bounds cross (min > max: no exporter writes that for one torch clamp, whose own
``min > max`` gives max as ONNX's Clip does) is tried split back into the upper bound first, then the lower (torch's
order; the other order is what the fused Clip computes).  Tested on a small model in ``test_crossed_clip.py``
(``relu(x.clamp(-2, -0.25))``, whose story before the fix was the re-export's "lowering of aten.relu").

After the fix (same harness, /tmp/heldU/run2): origin 3/3; class, verified and the mechanism told 3/3 (``lowering``,
``crossed_clip``: "Clip ... has bounds that cross (min 8 > max 6): the export fused two successive clamps into one
Clip"); repair passing ``check`` 3/3 (the Clip split); controls 3/3 clean.  Seconds: 7-12 s / 7-9 s.

Held out after the fix (written after it, first run /tmp/heldU/run3): ``act_stack``, ``nn.Sequential(nn.Hardtanh(-3,
-1), nn.ReLU6())`` in the deep model, the two modules' Clips fused into Clip(x, 0, -1): origin ``body.act.1`` (the
fused Clip is ReLU6's output; Hardtanh's has none in the file), ``crossed_clip`` verified, repair passing ``check``
(11 s / 9 s); its TorchScript file clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params)

_CROSSED = ("lowering", "rewrite", {"rewrite": "crossed_clip"}, "bounds that cross")

# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("relu6_range", "dynamo"): _CROSSED, ("capped_relu", "dynamo"): _CROSSED,
            ("clamp_chain", "dynamo"): _CROSSED, ("act_stack", "dynamo"): _CROSSED}
CLEAN = [("relu6_range_overlap", "dynamo"), ("relu6_range", "torchscript"), ("capped_relu", "torchscript"),
         ("act_stack", "torchscript")]
FAST: set = set()
ORIGIN = "body"
# the fused Clip is ReLU6's output: Hardtanh's has no value in the file, so the stack's last module is the origin
ORIGINS = {("act_stack", "dynamo"): "body.act.1"}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40u")


@pytest.mark.parametrize("form", params(REPAIRED, FAST))
def test_the_held_out_forms_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGINS.get(form, ORIGIN))


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
