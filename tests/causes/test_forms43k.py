"""Held-out batch 43K for issue 30 (tests/causes/forms43k.py): a blind first run on forms nobody here has tuned on,
screened in DETECTION, SEGMENTATION AND POSE HEADS WITH THEIR POST-PROCESSING WRITTEN IN PLAIN TORCH (box decoding
and encoding, YOLO grids, IoU matrices, peak NMS, top-k query selection, soft-argmax, mask upsampling and pasting;
forms43k's docstring lists the ~120 exports screened).  The exporters compute what torch computes for the head code
itself; what drifts past the tolerance with both exporters is a tie order the head creates (the zeros peak NMS
leaves, class scores saturated at exactly 1.0) and ONNX Runtime's dropped float16 rounding where boxes are decoded
at image coordinates in the model's own float16 (autocast, a ``.half()`` head).  What a right answer is (written
before the first run's causes were read; /tmp/h43k/judge.md): the origin ``body``; for the ties, class
``op-compat`` naming the tied values and that no patch exists; for the float16 decodes, class ``dtype`` naming the
float16 rounding ONNX Runtime drops, verified, and a repair that passes ``check``; the controls without an error.

First run, engine at the branch base (b679df19, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h43k/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| peak_topk torchscript (deep) | right | yes: ``op-compat`` ties | yes | n/a (no patch exists, said) | n/a (none written, said) | 18 s / 20 s |
| peak_topk dynamo (deep) | right | yes | yes | n/a | n/a | 21 s / 16 s |
| query_select torchscript (shallow) | right | **no**: ``stability`` (float64 counterfactual) | no | (float64 only) | n/a | 6 s / 5 s |
| query_select dynamo (shallow) | right | **no**: ``stability`` | no | (float64 only) | n/a | 8 s / 8 s |
| box_area torchscript (shallow) | right | **no**: ``precision`` (pays for its float16) | no | **no** (nothing tried) | **no file** | 6 s / 4 s |
| box_area dynamo (shallow) | right | **no**: ``precision`` | no | **no** | **no file** | 6 s / 4 s |
| half_iou torchscript (deep) | right | **no**: ``precision`` | no | **no** | **no file** | 10 s / 4 s |
| half_iou dynamo (deep) | right | **no**: ``precision`` | no | **no** | **no file** | 12 s / 8 s |
| controls peak_topk_plain dy, query_select_cool ts, box_area_f32 dy, half_iou_f32 ts, grid_decode ts + dy | ok (6/6) | | | | | 6-11 s |

First run: origin 8/8; class by mechanism 2/8; told 2/8; verified and repair passing check 0/4 where a patch can
exist (the four float16 pairs), the ties said unrepairable 2/4; controls 6/6.

Fixed generically: ``causes/verify.py`` (the precision story no longer stops the search where the opmath
counterfactual verifies: the origin's float16 is the model's own and ONNX Runtime drops a rounding torch makes;
``test_own_half_precision.py``) and ``propose/numerics/conditioning.py`` (no float64 counterfactual where the
origin's TopK selects among tied values: float64 breaks float32's ties, but both sides round alike and order them
otherwise; ``test_saturated_ties.py``).  After (the CLI, seed 7, /tmp/h43k/run2): origin 8/8, class 8/8, told
8/8, verified and repair passing check 4/4 (``opmath_float32`` per_op; the repaired files WITHIN BUDGET on 5
samples), the ties said unrepairable 4/4; controls 6/6; diagnose / repair 14-49 s / 13-32 s on a shared machine.
Left: nothing of this batch (the ties cannot be repaired in the graph by construction).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_ties_unrepairable, assert_verified_and_repaired, deep_forms,
                                     explained_forms, params)

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("box_area", "torchscript"): _ROUNDING, ("box_area", "dynamo"): _ROUNDING,
            ("half_iou", "torchscript"): _ROUNDING, ("half_iou", "dynamo"): _ROUNDING}
# tie orders: no graph edit reproduces torch's order; a right answer names the ties and says no patch exists
TIES = [("peak_topk", "torchscript"), ("peak_topk", "dynamo"), ("query_select", "torchscript"),
        ("query_select", "dynamo")]
CLEAN = [("peak_topk_plain", "dynamo"), ("query_select_cool", "torchscript"), ("box_area_f32", "dynamo"),
         ("half_iou_f32", "torchscript"), ("grid_decode", "torchscript"), ("grid_decode", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms43k")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_float16_box_decode_whose_rounding_onnx_runtime_drops_is_put_back(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(TIES, set()))
def test_a_tie_order_a_detection_head_creates_is_named_and_said_unrepairable(explained, form):
    assert_ties_unrepairable(explained, form)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TIES]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
