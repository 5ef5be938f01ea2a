"""Held-out batch G for issue 30 (tests/causes/forms40g.py): a blind first run on forms in three of the private
set's families (attention masking, loss functions, distance functions), written from upstream threads after
grepping every earlier suite, screened with torch 2.13 / ONNX Runtime 1.32 (forms40g's docstring lists what was
screened and matched).  What a right answer is, by mechanism (written down before the engine ran on them):

* ``alibi_encoder`` / ``alibi_stack``: an ``nn.TransformerEncoderLayer`` in eval given an ALiBi float bias: torch's
  fused fast path reads a float mask as a boolean one (every non-zero entry masked), both exporters trace the slow
  path that adds it (pytorch/pytorch#118628).  The origin is the layer itself (``body.layer``; the stack's first
  layer), whose children torch's fast path never calls; ``lowering`` (the fast path no exporter traces, the story
  naming it), verified by a patch reading the mask as boolean, and a repaired file can exist (that patch, in every
  layer of the stack).
* ``soft_margin_*`` (dynamo): ``F.soft_margin_loss`` lowered with ``log1p`` as ``Log(1 + x)``: ``stability`` by the
  accurate log1p form, the story naming ``soft_margin_loss``; repaired.
* ``half_bce``: ``binary_cross_entropy_with_logits`` of float16 logits: both files compute ``Log(Sigmoid(x))`` in
  float16 (-inf where the Sigmoid rounds to 0): ``stability`` (or ``dtype`` if a float32-with-torch's-rounding patch
  is what verifies; an ONNX Runtime kernel bug, ``op-compat``, would be wrong); repaired.
* ``half_normalize``: ``F.normalize`` of float16 embeddings: ONNX Runtime's float16 ``ReduceL2`` rounds otherwise
  than torch's float32 accumulation rounded once: ``dtype`` by the per-op float32-with-rounding rewrite; repaired.
* ``near_duplicates`` / ``chebyshev`` (TorchScript): its ``pairwise_distance`` symbolic moves ``eps`` into the root's
  exponent and drops the Abs (p=inf: 1 where torch gives the max): ``lowering`` of ``pairwise_distance``, verified
  by the dynamo re-export, repaired by grafting it.

First run, engine as on main at 7f7a26d (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldG/firstrun.sh, 3 samples, never tuned on these forms):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| alibi_encoder torchscript (deep) | **no**: "the model outputs differ, but no module could be named as the origin" | no | no | no file | 5 s / 3 s |
| alibi_encoder dynamo (deep) | **no**, the same | no | no | no file | 4 s / 3 s |
| alibi_stack torchscript | **no**, the same | no | no | no file | 5 s / 2 s |
| soft_margin_hardness dynamo (deep) | right | yes: ``stability``, log1p as ``Log(1 + x)``, "in torch's soft_margin_loss" | yes | yes | 8 s / 8 s |
| soft_margin_shallow dynamo | right | yes, the same | yes | yes | 7 s / 6 s |
| half_bce torchscript | right | **no**: ``lowering``, "no patch among 21 tried" | **no** | no file | 10 s / 10 s |
| half_bce dynamo | right | **no**: ``lowering`` of ``aten.log_sigmoid``, "no patch among 17 tried" | **no** | no file | 12 s / 12 s |
| half_normalize torchscript (deep) | right | yes: ``dtype``, per-op float32 with rounding, "in torch's normalize" | yes | yes | 8 s / 5 s |
| half_normalize dynamo (deep) | right | yes, the same | yes | yes | 9 s / 7 s |
| near_duplicates torchscript | right | yes: ``lowering`` of ``pairwise_distance``, the dynamo re-export | yes | yes | 7 s / 6 s |
| chebyshev torchscript (deep) | right | yes: the same, the ``Pow`` named | yes | yes | 9 s / 8 s |
| controls: alibi_causal torchscript, soft_margin_small dynamo, normalize_float dynamo | ok, no error finding | | | | 5-8 s |

First run: origin 8/11; class by mechanism and verified 6/11; ``repair`` passing ``check`` 6/11 (a repaired file
can exist for every pair); controls 3/3 clean.  6 of the 11 pairs sit in deep models.

Why each miss (what decided it):
* ``alibi_*``: ``nn.TransformerEncoderLayer.forward`` leaves its fast path when any module under it has a forward
  hook (``why_not_sparsity_fast_path = "forward pre-/hooks are attached to the module"``).  drifttui's hooks
  (``runtime/torch_hooks.py: Hooks.installed``, ``register_forward_pre_hook`` / ``register_forward_hook`` on every
  module) made the hooked per-layer pass compute the slow path, which is what both files compute: every layer's own
  error was ~1e-7, while the plain output pass (no hooks: the fast path) differed by 7e-4 .. 1.4 at the outputs.
  ``decide`` found no failing module (``note: the outputs drift but no mapped module owns the error``), and
  ``repair`` had nothing to repair.
* ``half_bce`` (both): two mechanisms at one origin.  The catalogue's ``Log(Sigmoid)`` as ``-Softplus(-x)`` rewrite
  (``onnx/edit/lowerings/ort_workarounds.py``) removed the -inf but left 5.7e-3 (ONNX Runtime's CPU drops the float16 rounding
  torch does at each op, microsoft/onnxruntime#8787); the per-op rounding rewrite (``propose/numerics/opmath.py``) alone left
  the -inf (its float16 Sigmoid still rounds to 0).  ``verify.py`` tries patches one at a time and stops at the
  first that verifies: none did, and the headline is the localiser's unverified ``lowering``.

After the first run (session 31, three generic changes):
* **drifttui's hooks are not seen by the model** (``runtime/torch_hooks.py``): registered globally and routed by
  module identity, so a module that inspects its own ``_forward_hooks`` takes the path the plain forward takes.  The
  alibi origins become ``body.layer`` / ``body.encoder.layers.0`` (their children are not called, as in torch).
* **the fused layer's boolean reading of a float mask** (``propose/edits/fast_path.py``, ``rewrite: bool_mask``):
  proposed where the origin is an ``nn.TransformerEncoderLayer`` in eval with the fast path enabled and the mask
  added before a Softmax holds a finite non-zero entry; a rewrite naming one input of one node is movable to the
  sibling layers (``propose/siblings.py``), so a stack's repaired file is whole.  Verified and repaired, all three.
* **two mechanisms at one origin** (``propose/residual.py``, patch ``op: sequence``): when nothing verified, the
  graph edit that lowered the origin's error most (10x, or removed every non-finite element) composed with each
  dtype-family patch of the case it leaves.  ``half_bce`` dynamo: ``-Softplus(-x)`` then the per-op rounding,
  ``stability``, verified and repaired.  ``half_bce`` torchscript stays open: its lowering's formula
  ``t log s + (1 - t) log(1 - s)`` rounds otherwise in float16 than torch's kernel ``(1 - t) x + softplus(-x)``
  once stabilised (1.9e-3 left, a strict xfail).  Session 32: torch's kernel computes ``(1 - t) x -
  log_sigmoid(x)``, rounding ``log_sigmoid(x)`` and then the difference; the stable form ``-Softplus(x)`` for
  ``Log(1 - Sigmoid(x))`` rounds once, one float16 step apart.  A second stable form, torch's own formula
  ``log_sigmoid(x) - x`` (``ort_workarounds.log_sigmoid_torch``), leaves the same error alone; ``residual.py`` now
  composes each of the partial edits tied with the best (within 1.5x) with the per-op rounding, and that form's
  sequence leaves 0: verified and repaired (origin 11/11, class and verified 11/11).
So: origin 11/11, class by mechanism and verified 10/11, ``repair`` passing ``check`` 10/11; controls 3/3 clean
(the same harness after the changes, a quieter machine: diagnose 4-8 s, repair 4-8 s per pair; controls 3-5 s).
Held out after the changes (forms40g.py): ``soft_padding`` and ``prenorm_bias``, both exporters, 4/4 verified and
repaired on their one run.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, \
    params

_FAST = ("lowering", "rewrite", {"rewrite": "bool_mask"}, "fast path")
_LOG1P = ("stability", "rewrite", {"rewrite": "log1p"}, "soft_margin_loss")
_HALF = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "float16")
_PDIST = ("lowering", "reexport", {"exporter": "dynamo"}, "pairwise_distance")
_TWO = ("stability", "sequence", {}, "second mechanism")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("soft_margin_hardness", "dynamo"): _LOG1P, ("soft_margin_shallow", "dynamo"): _LOG1P,
            ("half_normalize", "torchscript"): _HALF, ("half_normalize", "dynamo"): _HALF,
            ("near_duplicates", "torchscript"): _PDIST, ("chebyshev", "torchscript"): _PDIST}
# the first run's misses, with the right answer
MISSED_FAST = {("alibi_encoder", "torchscript"): _FAST, ("alibi_encoder", "dynamo"): _FAST,
               ("alibi_stack", "torchscript"): _FAST}
MISSED_TWO = {("half_bce", "dynamo"): _TWO}
MISSED_OPEN = {("half_bce", "torchscript"): _TWO}
# held out after the first run (forms40g.py says so): never tuned on
HELD_OUT = {("soft_padding", "torchscript"): _FAST, ("soft_padding", "dynamo"): _FAST,
            ("prenorm_bias", "torchscript"): _FAST, ("prenorm_bias", "dynamo"): _FAST}
CLEAN = [("alibi_causal", "torchscript"), ("soft_margin_small", "dynamo"), ("normalize_float", "dynamo")]
ORIGIN = {"alibi_encoder": "body.layer", "alibi_stack": "body.encoder.layers.0", "soft_padding": "body.layer",
          "prenorm_bias": "body.layer"}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40g")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_known_mechanism_in_a_new_call_is_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN.get(form[0], "body"))


@pytest.mark.parametrize("form", params(MISSED_FAST, set()))
def test_a_fused_fast_path_reading_a_float_mask_as_boolean_is_named_verified_and_repaired(explained, form):
    """First run: no origin at all (drifttui's hooks sent the encoder layer down its slow path, which the files
    compute).  Since: the hooks are unseen, the origin is the layer, and its boolean reading of the ALiBi bias
    verifies (``bool_mask``) and repairs, in every layer of a stack."""
    assert_verified_and_repaired(explained, form, MISSED_FAST[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", params(HELD_OUT, set()))
def test_held_out_float_masks_on_the_fused_path_are_verified_and_repaired(explained, form):
    """Written after the change, never tuned on: a soft float key-padding penalty, and a pre-norm GELU layer's
    bias.  Measured once: 4/4 verified and repaired (diagnose 6-9 s, repair 5-8 s)."""
    assert_verified_and_repaired(explained, form, HELD_OUT[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", params(MISSED_TWO, set()))
def test_two_mechanisms_at_one_origin_are_verified_as_one_sequence(explained, form):
    """First run: unverified ``lowering`` (the stable form alone left ONNX Runtime's dropped float16 roundings, the
    roundings alone left the -inf).  Since: the stable form, then the per-op rounding, as one patch sequence; the
    story says the precision the lowering loses (float16, not float32)."""
    assert_verified_and_repaired(explained, form, MISSED_TWO[form], "body")
    head = explained(*form)[4].findings[0]
    assert "loses precision in float16" in head.message and "Softplus" in head.message, head.message


@pytest.mark.parametrize("form", params(MISSED_OPEN, set()))
def test_the_torchscript_float16_bce_is_verified_and_repaired(explained, form):
    """Session 31: a strict xfail (1.9e-3 left after the stable form and the per-op rounding).  Since (session 32):
    torch's own formula of the stable form, ``Log(1 - Sigmoid(x))`` as ``log_sigmoid(x) - x``
    (``log_sigmoid_torch``), rounded per op as torch rounds, composed with the per-op rounding: 0 left."""
    assert_verified_and_repaired(explained, form, MISSED_OPEN[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *MISSED_FAST, *MISSED_TWO, *MISSED_OPEN]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
