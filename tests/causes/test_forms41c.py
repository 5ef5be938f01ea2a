"""Held-out batch 41C for issue 30 (tests/causes/forms41c.py): a blind first run on forms nobody here has tuned on,
screened from ONNX RUNTIME's side, a CPU kernel that computes otherwise than the ONNX op on a graph both exporters
wrote right (forms41c's docstring lists what was screened and matched, or drifts by a mechanism the suites hold).
Screening (35 minutes) found two kernels: ``Range`` adds ``delta`` to a float32 running value (the spec and torch:
``start + i * delta``), and ``Softmax`` flushes probabilities below float32's smallest normal number to 0 (torch keeps
them as subnormal numbers).  Both need a reader that amplifies an error far below the tolerance: a phase or a
truncating ``Cast`` after the ``Range``, a ``Log`` after the ``Softmax``.  What a right answer is, by mechanism
(written before the first run's causes were read; /tmp/heldC/judge.md of session 39): origin ``body`` (``""`` for
the shallow ``frame_upsample``), class ``op-compat`` kind ``runtime`` (the graph is right, the kernel is not; the
ONNX reference implementation computes torch's values), repairable by an equivalent graph ONNX Runtime computes
right; NOT ``lowering`` (both exporters write the same right op: no re-export helps), NOT a ``stability`` story
of an ill-conditioned model or a float64 origin that names no kernel.  "told": the story names ONNX Runtime's
``Range`` / ``Softmax`` kernel as what computes otherwise.

First run, engine as on main at c3a7d89 (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldC/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with four other
sessions).  Round 2 (``tone_slow``, ``capped_entropy``) was written after round 1's outputs were read and before the
engine ran on it, with the engine unchanged (forms41c's docstring says why: two round-1 forms were less well posed
than the judge assumed):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| tone_grid torchscript (deep, dynamic length) | right | **no**: ``lowering`` of ``mul``, "the ONNX reference implementation computes the same as ONNX Runtime" | no | **no** ("no patch among 21 tried") | **no** (exit 4) | 25 s / 35 s |
| tone_grid dynamo (deep, dynamic length) | right | **no**: the same | no | **no** | **no** | 24 s / 20 s |
| frame_upsample torchscript (dynamic length) | right (``""``) | **no**: ``stability``, "ill-conditioned ... no node and no lowering is wrong on its own", ``origin_float64`` | no | yes (float64 origin) | yes | 17 s / 19 s |
| frame_upsample dynamo (dynamic length) | right | **no**: the same | no | yes | yes | 34 s / 36 s |
| log_prob torchscript (deep) | right | **no**: ``stability`` kind ``model``, "ill-conditioned ... ONNX Runtime's float32 kernels lose more of it than torch's" | no | yes (float64 on both sides) | **no** ("nothing to apply") | 27 s / 29 s |
| log_prob dynamo (deep) | right | **no**: the same | no | yes | **no** | 35 s / 36 s |
| tone_slow torchscript (deep, dynamic length; round 2) | right | **no**: ``stability``, ``origin_float64``, "no node ... is wrong on its own" | no | yes (float64 origin) | yes | 40 s / 22 s |
| tone_slow dynamo (deep, dynamic length; round 2) | right | **no**: the same | no | yes | yes | 53 s / 45 s |
| capped_entropy torchscript (deep; round 2) | right | **no**: ``stability``, ``origin_float64`` ("in torch's matmul") | no | yes (float64 origin) | yes | 28 s / 30 s |
| capped_entropy dynamo (deep; round 2) | right | **no**: the same | no | yes | yes | 36 s / 31 s |
| controls: frame_upsample_off torchscript, log_prob_off dynamo, capped_entropy_off dynamo | ok, no error finding | | | | | 10 s, 15 s, 16 s |

First run: origin 10/10; class by mechanism and verified 0/10 (8/10 verified, each by a float64 counterfactual told
as an ill-conditioned model); told 0/10; repair passing ``check`` 6/10 (by the float64 origin, a story that is not
the mechanism); controls 3/3 clean.  8 of the 10 pairs sit in deep models (20 module calls).

Why the misses (what decided it):
* every pair localised right: "the ONNX reference implementation matches PyTorch on these nodes and ONNX Runtime does
  not", first divergent node the reader (``Sin``, the truncating ``Cast``, ``Log``).  But the node-by-node own-error
  test (``locate/localise_nodes.own_errors``: each node run alone on the reference evaluator's inputs) counts a
  relative error over 1e-2 on normal values: ``Range``'s is 1e-5 (100 .. 300 units in the last place: a running
  sum's), and ``Softmax``'s flushed values are subnormal, left out.  So no kernel was named, no proposer edits a
  ``Range`` or a ``Softmax`` (the workaround catalogue has neither), and the last resort, the whole origin in float64,
  verified and was told as an ill-conditioned model where no node is wrong;
* ``tone_grid`` (50 Hz): the ONNX reference implementation itself is 0.9 .. 1.7x the tolerance off torch (the phase
  gain of 314 on float32 times: the float32 ``delta`` both exporters must store, ``Range`` taking one type), so the
  localisation said "the graph itself computes something else"; ``log_prob``: torch's own float32 result is over the
  tolerance at ``body`` (probabilities near a gap of 103.3 hold a few bits), so the conditioning counterfactual (both
  sides in float64, nothing to repair) is the documented answer for an ill-conditioned module, and the judge's
  premise was off on both.

Fixed generically (``propose/numerics/kernel64.py``, tested on bare graphs in ``test_kernel64.py``): ``own_errors``
also measures each node's error in units of the reference value's last place, the subnormal values it flushes to 0,
and whether its error grows along the output; a node that sums nothing and is 64 units or more off, or that flushes
a nonzero subnormal value to 0, is a kernel that computes otherwise, and that one node computed in float64 and cast
back (``rewrite: kernel_float64``, ONNX Runtime's double kernel) is proposed: class ``op-compat``, kind ``runtime``,
the story naming the kernel (and "its error grows along the output, as a value accumulated step by step").  Such a
node's value matches torch within the tolerance, so the compensating-patch rule (``conclude._contradicted``) no longer
takes a patch at a node wrong on its own for one that "makes up for" another call.  The conditioning story names the
deviating kernel when the file's error is far over torch's own (``conditioning._worse``).

After the fix (same harness, /tmp/heldC/out5):

| pair | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| frame_upsample torchscript / dynamo | yes: ``op-compat``, ``kernel_float64`` on ``Range`` | yes ("Range kernel ... its error grows along the output, as a value accumulated step by step") | yes | yes | 12 s / 12 s, 16 s / 16 s |
| tone_slow torchscript / dynamo | yes: the same | yes | yes | yes | 13 s / 10 s, 14 s / 13 s |
| capped_entropy torchscript / dynamo | yes: ``op-compat``, ``kernel_float64`` on ``Softmax`` ("returns 24 value(s) as 0 where the reference holds a nonzero subnormal number") | yes | yes | yes | 9 s / 10 s, 17 s / 16 s |
| log_prob torchscript / dynamo | no: ``stability`` kind ``model`` (torch's own float32 over the tolerance), now naming "ONNX Runtime's Softmax kernel ... returns 54 value(s) as 0" | yes | yes (float64 on both sides) | no (nothing to apply: no file computes torch's own rounding there) | 35 s / 29 s, 34 s / 33 s |
| tone_grid torchscript / dynamo | no: ``lowering``, unverified (strict xfail: two mechanisms stacked, the kernel and the float32 ``delta``) | no | no | no | 44 s / 34 s, 45 s / 39 s |
| controls (3) | ok, no error finding | | | | 11 s, 17 s, 14 s |

After: class by mechanism and verified 6/10, told 8/10, repair passing ``check`` 6/10 (all six by the mechanism's
patch); controls 3/3 clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, assert_verified_not_repairable,
                                     assert_verified_to_torch_precision, deep_forms, explained_forms, params)
from tests.causes.ort_kernels import SOFTMAX_KEEPS, softmax_flushes

_RANGE = ("op-compat", "rewrite", {"rewrite": "kernel_float64"}, "Range kernel computes otherwise")
_SOFTMAX = ("op-compat", "rewrite", {"rewrite": "kernel_float64"}, "Softmax kernel computes otherwise")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("frame_upsample", "torchscript"): _RANGE, ("frame_upsample", "dynamo"): _RANGE,
            ("tone_slow", "torchscript"): _RANGE, ("tone_slow", "dynamo"): _RANGE,
            ("capped_entropy", "torchscript"): _SOFTMAX, ("capped_entropy", "dynamo"): _SOFTMAX}
# the kernel's error stacked on torch's own float32 rounding (a 50 Hz phase): verified to torch's own precision
TORCH_PRECISION = {("tone_grid", "torchscript"): _RANGE, ("tone_grid", "dynamo"): _RANGE}
# torch's own float32 result over the tolerance: the conditioning counterfactual, the deviating kernel named
ILL_CONDITIONED = {("log_prob", "torchscript"): ("stability", "float64", {}, "Softmax kernel at"),
                   ("log_prob", "dynamo"): ("stability", "float64", {}, "Softmax kernel at")}
# drift by ONNX Runtime's Softmax flushing subnormal probabilities, which it does on some processors only
FLUSHED = {"capped_entropy", "log_prob"}
CLEAN = [("frame_upsample_off", "torchscript"), ("log_prob_off", "dynamo"), ("capped_entropy_off", "dynamo")]
ORIGIN = {"frame_upsample": ""}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes import forms41c

    return explained_forms(tmp_path_factory, "forms41c", inputs=forms41c.INPUTS, export=forms41c.export_kwargs)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_kernel_that_computes_otherwise_is_named_verified_and_repaired(explained, form):
    if form[0] in FLUSHED and not softmax_flushes():
        pytest.skip(SOFTMAX_KEEPS)
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN.get(form[0], "body"))


@pytest.mark.parametrize("form", params(TORCH_PRECISION, set()))
def test_the_tone_at_50_hz_is_the_range_kernel_to_torchs_own_precision(explained, form):
    assert_verified_to_torch_precision(explained, form, TORCH_PRECISION[form], "body")


@pytest.mark.parametrize("form", params(ILL_CONDITIONED, set()))
def test_an_ill_conditioned_module_names_the_kernel_that_loses_more(explained, form):
    if form[0] in FLUSHED and not softmax_flushes():
        pytest.skip(SOFTMAX_KEEPS)
    assert_verified_not_repairable(explained, form, ILL_CONDITIONED[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *TORCH_PRECISION, *ILL_CONDITIONED]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
