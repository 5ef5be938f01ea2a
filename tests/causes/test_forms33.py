"""Upstream drift forms found for issue 30 point 8 in session 23 (tests/causes/forms33.py), none of them in
forms20/30/32, upstream.py, real.py or the catalogue; most inside a deep model (forms30's 16-call stem, the
form, a head), exported by the real exporters and run in real ONNX Runtime: the origin, the cause's class by
mechanism, ``verified``, and ``repair``'s file passes ``check``.

They verify by generic counterfactuals, not by an entry per form: a guard ``Where(IsNaN | IsInf, c, y)`` on
the node that makes a NaN or inf where torch is finite (propose/edits/singular.py: torch defines its singular
points, the lowering leaves them undefined), a comparison whose boundary is decided on the other side, a
selection op made to propagate NaN as torch does (propose/edits/nan_select.py), the re-export with the other
exporter or torch's decompositions, the catalogue's stable forms.  The forms no
route verifies are asserted as what the engine says of them (origin, class, not verified) so a change shows.
The fast forms run in ``make test``; the rest behind the ``drifts`` marker (``make test-drifts``).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms,
                                     explained_forms, params)

# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
VERIFIED = {
    # atan2(+0, x < 0) is pi in torch: both lowerings test y > 0 and give -pi (pytorch/pytorch#162570's family)
    ("atan2_zero", "torchscript"): ("lowering", "rewrite", {"rewrite": "boundary"}, "GreaterOrEqual"),
    ("atan2_zero", "dynamo"): ("lowering", "rewrite", {"rewrite": "boundary"}, "aten.atan2"),
    # a fully masked row of a float mask: torch's softmax gives 0, the lowerings NaN
    ("sdpa_float_mask", "torchscript"): ("lowering", "rewrite", {"rewrite": "nonfinite_guard", "value": 0.0},
                                         "Softmax"),
    ("sdpa_float_mask", "dynamo"): ("lowering", "rewrite", {"rewrite": "nonfinite_guard", "value": 0.0},
                                    "aten.scaled_dot_product_attention"),
    # torch.sign(NaN) is 0
    ("sign_nan", "torchscript"): ("lowering", "rewrite", {"rewrite": "nonfinite_guard"}, "never has"),
    ("sign_nan", "dynamo"): ("lowering", "rewrite", {"rewrite": "nonfinite_guard", "value": 0.0}, "aten.sign"),
    # the max over an empty bag: torch 0, the TorchScript file's ReduceMax -inf
    # (a ReduceMax inside the lowering's Loop: no top-level value to guard) the dynamo export is right; its
    # offsets, a buffer the file folded, are held by the graft
    ("empty_bag_max", "torchscript"): ("lowering", "reexport", {"exporter": "dynamo"}, "body.bag"),
    # Log(Sigmoid(x)) of large logits: the stable form
    ("bce_pos_weight", "torchscript"): ("stability", "rewrite", {"rewrite": "workaround"}, "Softplus"),
    ("bce_prob", "dynamo"): ("stability", "rewrite", {"rewrite": "workaround"}, "Sigmoid"),
    # Pow(2, a) overflows on finite inputs where torch is finite: the function in an unstable form (session 42,
    # locate/overflow.py; the decomposition's re-export still verifies it)
    ("logaddexp2", "dynamo"): ("stability", "reexport", {"decompose": "core_aten"}, "aten.logaddexp2"),
    # ONNX Runtime's selection kernels skip NaN where torch propagates it: no export route changes a kernel,
    # the graph-level counterfactual does (propose/edits/nan_select.py: the op made to see NaN as torch does).
    # ORT's ArgMax skips NaN, torch (and the reference evaluator) take it as the largest
    ("argmax_nan", "dynamo"): ("op-compat", "rewrite", {"rewrite": "nan_propagate", "node": "node_argmax"},
                               "ArgMax node_argmax is fed NaN"),
    ("argmax_nan", "torchscript"): ("op-compat", "rewrite", {"rewrite": "nan_propagate", "node": "/body/ArgMax"},
                                    "first NaN's index"),
    # ONNX's MaxPool (ORT and the reference evaluator) skips NaN, torch propagates it: never a padding story
    ("maxpool_nan", "torchscript"): ("op-compat", "rewrite", {"rewrite": "nan_propagate", "node": "/body/MaxPool"},
                                     "is fed NaN"),
    ("maxpool_nan", "dynamo"): ("op-compat", "rewrite", {"rewrite": "nan_propagate"}, "NaN for every window"),
    # 1 - Erf(x) and Exp(x^2) (1 - Erf(x)): the lowerings of special functions lose them at large arguments;
    # torch decomposes them only into prims no exporter lowers.  The module re-traced through their stable
    # forms (core/model/special_forms.py) verifies: stability
    ("erfc_log", "dynamo"): ("stability", "reexport", {"retrace": "make_fx_core_aten"}, "1 - Erf(x)"),
    ("erfcx", "dynamo"): ("stability", "reexport", {"retrace": "make_fx_core_aten"}, "aten.special_erfcx"),
    ("log_ndtr", "dynamo"): ("stability", "reexport", {"retrace": "make_fx_core_aten"}, "aten.special_erfcx"),
    # ONNX has no mean reduction: the dynamo lowering of scatter_reduce(..., "mean") is ScatterElements
    # (reduction="none"), the last value scattered; torch's definition (scatter_forms.py) verifies
    ("scatter_mean", "dynamo"): ("lowering", "reexport", {"retrace": "make_fx_core_aten"},
                                 "ScatterElements(reduction='none')"),
}
ORIGIN = {"empty_bag_max": "body.bag"}
# no export route, stable form or guard computes these right: (class, words of the message)
CLEAN = [("atan2_plain", "torchscript"), ("atan2_plain", "dynamo"), ("bce_pos_weight", "dynamo"),
         ("bce_pos_weight_small", "torchscript"), ("empty_bag_max", "dynamo")]
FAST = {("sign_nan", "torchscript"), ("atan2_zero", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms33")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_new_upstream_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], ORIGIN.get(form[0], "body"))


@pytest.mark.drifts
@pytest.mark.parametrize("form", CLEAN, ids=[f"{m}-{e}" for m, e in CLEAN])
def test_the_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(VERIFIED))
    assert len(deep) * 2 >= len(VERIFIED), deep
