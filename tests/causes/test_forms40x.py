"""Held-out batch X for issue 30 (tests/causes/forms40x.py): a blind first run on distance, norm and statistics forms
nobody here has tuned on, screened after grepping every earlier suite, with torch 2.13 / ONNX Runtime 1.32
(forms40x's docstring lists what was screened and matched, or drifts in a form the suites hold).  Screening (about
15 minutes, five rounds) found one exporter-pass mechanism no suite holds: the dynamo exporter's ONNX optimizer
constant-folds a float16 parameter's L2 norm with ONNX's reference implementation, which sums the squares in
float16, so a row whose norm passes 256 folds to inf and the row it normalises to 0 (torch accumulates in float32).
It is kept in four real-code forms, three in deep models (20 module calls).  What a right answer is, by mechanism
(written before the first run's causes were read; /tmp/heldX/judge.md of session 37):

* every dynamo pair: the origin ``body``; the file's folded constant (the normalised parameter) is not torch's value
  of the same parameter computation, because of the exporter's constant folding; verified by giving the file the
  right values (the export without the optimizer, grafted, or the constant replaced), repairable; NOT a wrong
  lowering of ``linalg_vector_norm`` / ``normalize`` (ReduceL2 is right), NOT ``stability`` or ``precision`` (the
  float16 cost), NOT ONNX Runtime's fusions.  "told": the story says the constant folding computed the parameter's
  norm / the constant otherwise, not only that an optimizer rewrite did something.
* controls: each form's TorchScript file (its folding runs torch's kernels) and ``cosine_codes_small`` (codes of
  norm near 6, dynamo): no drift origin, no error finding.

First run, engine as on main at 0445fb2 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldX/firstrun.sh on a pristine copy of 0445fb2, 3 samples, never tuned on these forms; seconds on a 2-core
machine shared with three other sessions):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| cosine_codes dynamo (deep, distance) | **no**: exit 3, "Data of TensorProto (t) should be stored in cosine_codes-dynamo.onnx.data, but it is not regular file" | **no** | **no** | **no** | **no** (exit 3) | 6 s / 5 s |
| proto_logits dynamo (deep, distance) | right | yes: ``lowering`` by the export without the ONNX optimizer, "not torch's aten.matmul.default lowered otherwise but the exporter's ONNX optimizer" | **no**: "(an op taken for an identity, a constant folded otherwise)", the optimizer's two usual rewrites guessed | yes | yes (the re-export grafted) | 55 s / 38 s |
| normed_rows dynamo (deep, norms) | right | yes, the same (the Gemm named, then the optimizer) | **no**, the same guess | yes | yes | 50 s / 26 s |
| weight_rms dynamo (shallow, statistics) | right | yes, the same | **no**, the same guess | yes | yes | 37 s / 19 s |
| controls: cosine_codes_small dynamo | **exit 3** (the same failure: an error on a clean file) | | | | | 10 s |
| controls: cosine_codes / proto_logits / normed_rows / weight_rms torchscript | within the float16 budget, no error finding | | | | | 25 s, 25 s, 27 s, 21 s |

First run: origin 3/4; class by mechanism and verified 3/4, the mechanism told 0/4; repair passing ``check`` 3/4;
controls 4/5 clean (the fifth stopped with exit 3).  3 of the 4 pairs sit in deep models (20 module calls).

Why the misses (what decided it):
* ``cosine_codes`` and its control stopped before any layer was compared: the dynamo exporter writes every
  initializer into ``<file>.data``, and the low-precision weight scan (``onnx/qweights._arr``) read a 2-D float16
  constant with ``numpy_helper.to_array`` on the proto drifttui loads without its external data, so onnx looked for
  the data file relative to the working directory.  Any dynamo file holding a 2-D float16 constant failed the same
  way (the other forms' folded constants are float32, after ``.float()``).  Past it, ``keep_float32`` (the float16
  share measure of step 4) and ``reduce_range`` read their initializers the same way.
* The three that ran were verified by the right counterfactual (the export without the optimizer), but the story
  could not say what the optimizer changed: ``optimizer_diff`` compares the two graphs' *computing* nodes and leaves
  constant folding out, so with no op dropped or replaced it fell back to "an op taken for an identity, a constant
  folded otherwise".

Fixed generically:
* ``onnx/qweights._arr`` reads through ``graph.tensor_array`` (the mapped external data); ``keep_float32`` and
  ``reduce_range`` read their initializers through ``graph.ReadInitializers`` (each read in place from the external
  file on first use).  Tested in ``tests/engine/test_external_low_precision.py`` (a float16 weight saved as external
  data, scanned from another working directory: failed before).
* ``propose/reexport/optimizer_diff.folded_change``: when the export without the optimizer verifies, every constant
  the optimized origin reads where the unoptimized lowering reads a value computed from constants alone (the same
  op, its k-th node) is compared with what ONNX Runtime computes from those nodes; a constant apart by more than a
  few roundings of its narrowest source type is told, with the ops it was folded from and their type, before the
  computing-node diff (``the optimizer's constant folding computed t (ReduceL2, Clip, Div of constants) otherwise
  than ONNX Runtime computes those nodes: 478 of 512 values differ, by up to 0.556 (it folds with ONNX's reference
  implementation, in the constants' own type, float16)``); the fix line says it too ("export without the exporter's
  ONNX optimizer (the optimizer's constant folding computed t (ReduceL2, Clip, Div of constants) otherwise)").
  Tested on a bare graph and on a small float16 ``F.normalize`` of a parameter in ``test_folded_constant.py`` (and a
  fold of norms near 6 that is not told).
* Past the crash, the clean control ``cosine_codes_small`` was a false DRIFT "by content": the weight check
  compared its folded codebook (``normalize(codebook)`` folded in float16, a unit or two in the last place from
  torch's value) with the constant torch computes and wanted every element within one rounding, then called it "not
  the model's" weight against the raw parameter.  ``prepare/qweight_check.FOLD_ULPS``: a float16 / bfloat16 fold
  within 4 roundings of a constant the model computes from its parameters is the model's (an int8 weight keeps the
  one-step rule; ``tests/engine/test_folded_constant_weights.py``).  ``deliver/restore`` read the file's weight type
  the same external-data way (``repair`` exit 3 there); it reads through ``tensor_array`` too.

After the fixes (same harness, /tmp/heldX/out3, the engine at this branch):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| cosine_codes dynamo | right | ``lowering``, the optimizer | yes: "the optimizer's constant folding computed t (ReduceL2, Clip, Div of constants) otherwise than ONNX Runtime computes those nodes: 478 of 512 values differ ... float16" | yes | yes | 48 s / 45 s |
| proto_logits dynamo | right | the same | yes (t, 318 of 512) | yes | yes | 29 s / 29 s |
| normed_rows dynamo | right | the same | yes (ReduceL2, Div, 726 of 1024) | yes | yes | 69 s / 46 s |
| weight_rms dynamo | right | the same | yes (ReduceL2, Div, 1010 of 1024) | yes | yes | 47 s / 26 s |
| controls: cosine_codes_small dynamo, the four torchscript files | within the float16 budget, no error finding | | | | | 18 s; 15, 19, 18, 9 s |

After: origin 4/4, class by mechanism and verified 4/4, told 4/4, repair passing ``check`` 4/4, controls 5/5 clean.

Held out, written after the fixes and never tuned on (/tmp/heldX/out4, their right answers added to judge.md before
the run): ``held_qk_cosine`` (deep: ``F.cosine_similarity`` of two float16 parameter sets, whose decomposition folds a
``ReduceSum`` of squares beside the ``ReduceL2``) and ``held_row_gain`` (deep: ``torch.norm(w, dim=1)`` of a float16
weight as a gain over its mean, inf / NaN in the file where torch is finite): 2/2 right origin, ``lowering`` by the
optimizer-free re-export with the constant folding told ("computed _to_copy (ReduceL2, ReduceSum, Clip, 2 more of
constants) ... 63 of 64 values differ"; "computed div (ReduceL2, ReduceMean, Div of constants) ... 32 of 32"),
verified and repaired on their first run, 53 s / 30 s and 26 s / 46 s; their TorchScript files clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params)

_FOLD = ("lowering", "reexport", {"optimize": False}, "the optimizer's constant folding computed")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {(form, "dynamo"): _FOLD for form in ("cosine_codes", "proto_logits", "normed_rows", "weight_rms",
                                                 "held_qk_cosine", "held_row_gain")}
CLEAN = [("cosine_codes_small", "dynamo"), ("cosine_codes", "torchscript"), ("normed_rows", "torchscript")]
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40x")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_the_held_out_forms_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [f for f in REPAIRED if not f[0].startswith("held_")]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
