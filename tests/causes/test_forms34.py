"""Upstream drift forms found for issue 30 point 8 in session 24 (tests/causes/forms34.py), none of them in
forms20/30/32/33, upstream.py, real.py or the catalogue; eight of the eleven inside a deep model (forms30's
16-call stem, the form, a head), exported by the real exporters and run in real ONNX Runtime: the origin,
the cause's class by mechanism, ``verified``, and ``repair``'s file passes ``check``.

They verify by generic counterfactuals: a ``Mul`` by an exact zero of a term holding NaN or inf guarded
(torch skips a term whose coefficient is 0: ``baddbmm``/``addmv`` with ``beta=0``); a ``Floor(Div(a, b))``
computed as torch's floor division, through ``fmod`` (``torch.remainder`` on multiples of the divisor,
both exporters); the make_fx re-trace (``cdist`` at p values no test had) and torch's decompositions
(``cross_entropy`` with ``ignore_index`` and smoothing), the dynamo export without its ONNX optimizer
(``cosine_embedding_loss``: the optimizer drops torch's ``+ 1e-12``), and since session 25 the re-trace through
torch's definition of the degrees-of-freedom reductions (``var(correction=3)`` over groups of 2, both exporters:
``core/model/dof_forms.py``).  Every form verifies.  The fast forms run in ``make test``; the rest behind the
``drifts`` marker (``make test-drifts``).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_ZERO = "multiplies a term holding NaN or inf by 0"
_FMOD = "floors the exact quotient through fmod"
# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
VERIFIED = {
    # baddbmm(bias, q, k^T, beta=0) over a bias holding NaN: the zero term is the wrong node (never the
    # Log that made the NaN: torch's bias holds it too)
    ("baddbmm_attention", "torchscript"): ("lowering", "rewrite", {"rewrite": "nonfinite_guard",
                                                                   "node": "/body/Mul_2"}, _ZERO),
    ("baddbmm_attention", "dynamo"): ("lowering", "rewrite", {"rewrite": "nonfinite_guard"},
                                      "the lowering of torch's aten.baddbmm.default " + _ZERO),
    ("addmv_beta0", "dynamo"): ("lowering", "rewrite", {"rewrite": "nonfinite_guard", "value": 0.0},
                                "the lowering of torch's aten.addmv.default " + _ZERO),
    # a - Floor(a / b) * b on multiples of b: torch floors the exact quotient
    ("remainder_phase", "torchscript"): ("lowering", "rewrite", {"rewrite": "fmod_floor"}, _FMOD),
    ("remainder_phase", "dynamo"): ("lowering", "rewrite", {"rewrite": "fmod_floor"}, "aten.remainder"),
    # cdist at p = 3 and p = 0 (forms32 had 1 and inf): the same re-trace
    ("cdist_p3", "torchscript"): ("lowering", "reexport", {"retrace": "make_fx_core_aten"}, "aten._cdist_forward"),
    ("cdist_p0", "torchscript"): ("lowering", "reexport", {"retrace": "make_fx_core_aten"}, "aten._cdist_forward"),
    ("ce_ignore_smooth", "dynamo"): ("lowering", "reexport", {"decompose": "core_aten"}, "aten.cross_entropy_loss"),
    # the exporter's ONNX optimizer drops the Add of torch's 1e-12 to each squared norm (taken for an
    # identity): the export without it verified until session 35; since, the Add put back before the product of
    # the norms heads (propose/edits/dropped_addend.py), the story the dropped addend, not aten.mul
    ("cos_embedding", "dynamo"): ("lowering", "rewrite", {"rewrite": "dropped_addend"}, "the export dropped the addend"),
    # torch divides by max(0, N - correction) (inf), both lowerings by N - correction (a negative variance):
    # the re-trace through torch's definition of the reduction (core/model/dof_forms.py, session 25)
    ("var_small_group", "torchscript"): ("lowering", "reexport", {"retrace": "make_fx_core_aten"},
                                         "aten.var.correction as Mul(ReduceMean(d^2), N) / (N - correction)"),
    ("var_small_group", "dynamo"): ("lowering", "reexport", {"retrace": "make_fx_core_aten"},
                                    "aten.var.correction as Mul(ReduceMean(d^2), N) / (N - correction)"),
}
CLEAN = [("remainder_plain", "torchscript"), ("baddbmm_finite", "dynamo"), ("var_plain", "torchscript"),
         ("cos_embedding_plain", "dynamo")]
FAST = {("addmv_beta0", "dynamo"), ("remainder_phase", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms34")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_new_upstream_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], "body")


@pytest.mark.drifts
@pytest.mark.parametrize("form", CLEAN, ids=[f"{m}-{e}" for m, e in CLEAN])
def test_the_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(VERIFIED))
    assert len(deep) * 2 >= len(VERIFIED), deep
