"""Held-out batch 45T for issue 30 (tests/causes/forms45t.py): a blind first run on forms nobody here has tuned on,
screened in VIDEO AND TEMPORAL-SEQUENCE MODELS WRITTEN IN PLAIN TORCH ((2+1)D Conv3d, the temporal shift module,
streaming causal convolutions with caches, frame differencing, temporal pooling / centring, relative-position
temporal attention, tubelet embedding, SlowFast sampling, interpolation along time, float16 and autocast; transformers
VideoMAE / TimeSformer / ViViT; forms45t's docstring lists the ~50 forms screened).  In float32 both exporters
compute what torch computes for all of it; what drifts is ONNX Runtime's dropped float16 rounding amplified by a
temporal difference or centring of features at a DC level (autocast, a float16 Conv3d), and TorchScript's lost
in-place temporal shift through views.  What a right answer is (written before the first run's causes were read;
/tmp/h45T/judge.md): the origin ``body``; for the float16 forms class ``dtype`` naming the dropped rounding,
verified, a repair that passes ``check``; for the shift class ``lowering`` naming the lost ``__setitem__``,
verified by the dynamo re-export; the controls without an error.

First run, engine at the branch base (23bf634b, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h45T/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| frame_diff torchscript (deep) | right | yes: ``dtype`` (``opmath_float32`` per_op) | **no** (headed at ``body.lin``, no torch op) | yes | yes | 30 s / 28 s |
| frame_diff dynamo (deep) | right | yes | yes (``add``) | yes | yes | 41 s / 32 s |
| conv3d_grad torchscript (deep) | right | yes: ``dtype`` | yes (``conv3d``) | yes | yes | 25 s / 13 s |
| conv3d_grad dynamo (deep) | right | yes | yes (``conv3d``) | yes | yes | 18 s / 19 s |
| view_shift torchscript (deep) | right | yes: ``lowering`` (lost in-place update) | yes (``__setitem__``) | yes (dynamo re-export) | yes | 16 s / 12 s |
| temporal_centre torchscript (shallow) | right | yes: ``dtype`` | **no** (headed at ``body.lin``) | yes | yes | 9 s / 8 s |
| temporal_centre dynamo (shallow) | right | yes | yes (``linear``) | yes | yes | 11 s / 12 s |
| controls frame_diff_f32 ts, conv3d_grad_f32 dy, view_shift dy, roll_shift ts, temporal_centre_f32 dy, causal_conv ts + dy | ok (7/7) | | | | | 20-30 s |

First run: origin 7/7; class by mechanism 7/7; told 5/7; verified 7/7; repair passing check 7/7; controls 7/7.

Fixed generically: ``causes/conclude.py`` (a verified patch written into a hazard finding of a child of the origin,
the dtype check's float16-initializer warning at ``body.lin`` sharing the patch's Gemm, now makes it the origin's
finding, told by the origin's torch op; ``test_child_hazard_story.py``).  After (seed 7): told 7/7 (both TorchScript
pairs now open "in torch's add" / "in torch's linear", as their dynamo twins did); the rest unchanged.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
# (model, exporter) -> (the head finding a right answer gives: class, patch op, what it changed, words; the torch op)
REPAIRED = {("frame_diff", "torchscript"): (_ROUNDING, "add"), ("frame_diff", "dynamo"): (_ROUNDING, "add"),
            ("conv3d_grad", "torchscript"): (_ROUNDING, ("conv3d", "add")),
            ("conv3d_grad", "dynamo"): (_ROUNDING, ("conv3d", "add")),
            ("temporal_centre", "torchscript"): (_ROUNDING, ("linear", "add")),
            ("temporal_centre", "dynamo"): (_ROUNDING, ("linear", "add")),
            ("view_shift", "torchscript"): (("lowering", "reexport", {"exporter": "dynamo"}, "in-place update"),
                                            "__setitem__")}
CLEAN = [("frame_diff_f32", "torchscript"), ("conv3d_grad_f32", "dynamo"), ("view_shift", "dynamo"),
         ("roll_shift", "torchscript"), ("temporal_centre_f32", "dynamo"), ("causal_conv", "torchscript"),
         ("causal_conv", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms45t")


@pytest.mark.parametrize("form", params(REPAIRED, {("temporal_centre", "torchscript")}))
def test_a_temporal_form_is_verified_repaired_and_told_by_its_torch_op(explained, form):
    expected, op = REPAIRED[form]
    assert_verified_and_repaired(explained, form, expected, "body")
    head = explained(*form)[4].findings[0]
    # told: the torch op called names the finding (its field) and its message (the float16 stories open with it);
    # merged with 45P's decisive rounding, the DC level's ``add`` before the conv / the centring is measured as the
    # rounding that matters most on these samples (an op of the chain, as the first run's conv3d / linear are)
    ops = op if isinstance(op, tuple) else (op,)
    assert head.module == "body" and any(o in (head.torch_op or "") and o in head.message.split(":")[0]
                                         for o in ops), (head.module, head.torch_op, head.message)


@pytest.mark.parametrize("form", params(CLEAN, {("roll_shift", "torchscript")}))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(REPAIRED))
    assert len(deep) * 2 >= len(REPAIRED), deep
