"""Held-out batch O for issue 30 (tests/causes/forms40o.py): a blind first run on forms nobody here has tuned on,
screened from lowerings whose semantics differ from torch at edge values and on rarely exercised arguments, after
grepping every earlier suite, with torch 2.13 / ONNX Runtime 1.32 (forms40o's docstring lists what was screened and
matched, or drifts in a form the suites hold).  Screening found two new mechanisms, both in the dynamo exporter:
``F.l1_loss(weight=)`` loses its weight in ``torch.export``'s trace (its ``__torch_function__`` dispatch does not pass
it on, pytorch/pytorch#193003), and torchlib's ``aten_histc`` bins by comparing with rounded edges where torch
truncates ``(x - min) * bins / (max - min)``.  What a right answer is, by mechanism (written before the first run's
causes were read; /tmp/heldO/judge.md of session 33):

* ``weighted_l1`` (deep) / ``weighted_l1_mean`` (shallow), dynamo: ``lowering`` in torch's ``l1_loss`` (the file
  computes the unweighted error), verified by a counterfactual computing torch's weighted error, repairable; NOT
  ``stability`` or a float64 story;
* ``edge_histogram`` (deep) / ``edge_histogram_shallow``, dynamo (TorchScript refuses ``histc``): ``lowering`` of
  ``aten.histc``, verified by computing the bins as torch does, repairable in principle; NOT ``stability``.

First run, engine as on main at 695f4ae (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldO/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with three other
sessions):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| weighted_l1 dynamo (deep) | right | **half**: ``lowering``, but it names torch's ``mul`` (the ``0.5 *`` after the loss: "the one node of body whose value the re-export never computes while its inputs match"), not ``l1_loss`` | yes (the TorchScript re-export grafted) | yes | 33 s / 22 s |
| weighted_l1_mean dynamo (shallow) | right | yes: ``lowering`` "in torch's l1_loss (torch.nn.functional.l1_loss ...)" | yes (the same graft) | yes | 20 s / 20 s |
| edge_histogram dynamo (deep) | right | ``lowering`` of ``aten.histc`` named, but **not verified**: "no patch among 9 tried removed it" | **no** | **no** ("cannot repair the file", exit 4) | 43 s / 36 s |
| edge_histogram_shallow dynamo | right | the same | **no** | **no** (exit 4) | 33 s / 29 s |
| controls: weighted_l1 torchscript, edge_histogram_off dynamo | ok, no error finding | | | | 11 s, 13 s |

First run: origin 4/4; class by mechanism and verified 1/4 (2/4 counting the wrong op named); repair passing
``check`` 2/4; controls 2/2 clean.  2 of the 4 pairs sit in deep models (20 module calls).

Why the misses (what decided it):
* ``histc``: the make_fx re-trace into core ATen keeps ``aten.histc`` (torch has no decomposition of it), so both
  re-exports reach torchlib's ``aten_histc`` again (the TorchScript exporter refuses it); no graph patch computes
  torch's binning.
* ``weighted_l1``: the node alignment against the TorchScript re-export (``locate/localise_nodes.align``) names the
  first file node whose value the re-export never computes while its inputs match.  The file's ``Abs`` (``|d|``, the
  unweighted loss) is a value the re-export computes too (before its ``* w``), so the first unmatched node is the
  ``Mul`` by 0.5 after the loss: an op that is missing (the weight's Mul) is blamed on the node after it.  In the mean
  form the unmatched node is the loss's own ``ReduceMean``, so its call is named right.  Looking closer, the value
  alignment by torch call (``locate/torch_align``), which would have named ``l1_loss``, records the forward under a
  ``TorchFunctionMode``: the same dispatch drops the weight there, so the recorded ``l1_loss`` held the unweighted
  error, found in the file, and nothing was named by value.

The fixes (each a mechanism, tested on small graphs and models before the batch was run again):
* ``core/model/histc_forms.py``: ``aten.histc`` by torch's definition on the make_fx re-trace route (torch's float
  arithmetic, the truncating conversion, counts as a sum of exact comparisons; a range from the data is left to the
  exporter), one line in ``retrace.DEFINITIONS``; ``tests/causes/test_histc_forms.py`` (torch's counts on edge grids,
  off them, NaN, out of range, float64; the exported re-trace exact with both exporters where the dynamo file is not).
* ``causes/locate/dropped_args.py``: in ``torch_align``'s mode a Python torch function's call is completed with the
  arguments its ``__torch_function__`` dispatch left out (read back from the function's own frame: a parameter
  that does not hold its default), so the recorded forward computes the plain forward; such a call, not computed by
  the file while the inputs it was dispatched with are, is the wrong op, told with what its dispatch drops, and
  named before the file's FX records (which are the trace's, and never saw the argument);
  ``tests/causes/test_dropped_args.py``.

After the fixes (same harness, /tmp/heldO/out2):

| pair | origin | class by mechanism | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| weighted_l1 dynamo (deep) | right | yes: ``lowering`` "in torch's l1_loss (torch.nn.functional.l1_loss, aten.l1_loss.default; ...; its __torch_function__ dispatch drops weight=, so a trace through torch-function modes (torch.export) records the call without it)" | yes | yes | 28 s / 31 s |
| weighted_l1_mean dynamo (shallow) | right | yes, the same words | yes | yes | 26 s / 25 s |
| edge_histogram dynamo (deep) | right | yes: ``lowering``, "lowers torch's aten.histc.default as counts of the values below each edge ...; torch's definition ... computes what torch computes" | yes (the make_fx re-trace through the definition) | yes | 50 s / 41 s |
| edge_histogram_shallow dynamo | right | yes, the same | yes | yes | 37 s / 35 s |
| controls: weighted_l1 torchscript, edge_histogram_off dynamo | ok, no error finding | | | | 21 s, 23 s |

After the fixes: origin 4/4, class by mechanism and verified 4/4, repair passing ``check`` 4/4, controls 2/2 clean.

Held out, written after the fixes and never tuned on (not counted above): ``held_l1_sum`` (deep, dynamo:
``l1_loss(weight=, reduction="sum")`` as a gate) and ``held_histc_wide`` (deep, dynamo: a 0.1 grid over 30 bins of
[-3, 3]): both verified on their first run (``lowering`` in torch's l1_loss with its dropped ``weight=``; the histc
definition's re-trace), both repaired files pass ``check`` (8 s / 9 s and 16 s / 16 s).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_L1 = ("lowering", "reexport", {"exporter": "torchscript"}, "l1_loss (torch.nn.functional.l1_loss")
_DROPS = "dispatch drops weight="
_HISTC = ("lowering", "reexport", {"retrace": "make_fx_core_aten"}, "aten.histc")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("weighted_l1", "dynamo"): _L1, ("weighted_l1_mean", "dynamo"): _L1,
            ("edge_histogram", "dynamo"): _HISTC, ("edge_histogram_shallow", "dynamo"): _HISTC}
HELD = {("held_l1_sum", "dynamo"): _L1, ("held_histc_wide", "dynamo"): _HISTC}
CLEAN = [("weighted_l1", "torchscript"), ("edge_histogram_off", "dynamo")]
ORIGIN = "body"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40o")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_the_held_out_forms_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN)


@pytest.mark.parametrize("form", params(HELD, set()))
def test_the_forms_held_out_after_the_fixes_are_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, HELD[form], ORIGIN)


@pytest.mark.drifts
def test_the_weighted_l1_findings_say_the_dispatch_drops_the_weight(explained):
    for form in (("weighted_l1", "dynamo"), ("weighted_l1_mean", "dynamo")):
        head = explained(*form)[4].findings[0]
        assert _DROPS in head.message and head.evidence.get("torch_op_dropped") == ["weight"], head.message


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
