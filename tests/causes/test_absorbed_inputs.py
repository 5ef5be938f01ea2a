"""Issue 30 point 6, the input side: a module whose input has no ONNX value of its own (the exporter merged the
view its parent made into the module's own first view: GPT-2's attention and its ``c_proj``) is split from the
ops that computed it at the value its nodes read, seen through that view (``core/prepare/plan/absorbed_inputs.py``);
and an input that shape alone cannot pair (OPT's positional embedding takes the mask and the position ids) is
paired by content, never with the other tensor.  The origin is the module whose own computation differs, never a
consumer fed the wrong values.  Real exporters, real ONNX Runtime, deep models (tests/causes/absorbed_input_forms.py).

First run, before the mechanisms: ``merged_signbit`` (dynamo) named ``body.proj``, the consumer; ``positions_floor``
(TorchScript) and ``positions_signbit`` (dynamo) named ``body``, whose position ids were compared with the mask.
With its origin right, ``positions_signbit``'s verifying re-export (``unit`` re-traced into core ATen) still failed
"on fresh sample 3 (local error inf)": ``unit`` is called with the position ids first (OPT's attention too), its
graft bakes them in, and the fresh sample fed the re-export every call input by position (``Graft.baked``).
"""
from __future__ import annotations


import pytest

from tests.causes.absorbed_suite import assert_the_one_origin_verified_and_repaired, explained_forms, params


# (model, exporter) -> (origin, class, words of the headline)
DRIFTS = {
    ("merged_signbit", "dynamo"): ("body", "lowering", "aten.signbit"),
    ("merged_floor", "torchscript"): ("body", "dtype", "truncates towards zero"),
    ("positions_floor", "torchscript"): ("body.unit", "dtype", "truncates towards zero"),
    ("positions_signbit", "dynamo"): ("body.unit", "lowering", "aten.signbit"),
    # one tensor passed three times (``attn(h, h, h)``): paired with the first, as before (a guard on the content
    # pairing: tied, the inputs were left unpaired and ``body.attn``, fed ``body``'s op, was named)
    ("shared_floor", "torchscript"): ("body", "dtype", "truncates towards zero"),
    ("shared_signbit", "dynamo"): ("body", "lowering", "aten.signbit"),
}
CLEAN = [("merged_relu", "dynamo"), ("merged_relu", "torchscript")]
FAST = {("merged_signbit", "dynamo"), ("positions_floor", "torchscript"), ("positions_signbit", "dynamo"),
        ("shared_floor", "torchscript"), ("merged_relu", "dynamo")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "absorbed_input_forms")


@pytest.mark.parametrize("form", params(DRIFTS, FAST))
def test_the_module_whose_own_computation_differs_is_the_origin_verified_and_repaired(explained, form):
    assert_the_one_origin_verified_and_repaired(explained, form, DRIFTS[form])


def test_the_merged_input_is_fed_through_its_view(explained):
    """dynamo merged ``heads``' Reshape into ``proj``'s: ``proj`` is paired with the view and says so; its own
    error is torch's computation, not its parent's."""
    _, _, run, result, _ = explained("merged_signbit", "dynamo")
    proj = next(L for L in result.layers if L.module == "body.proj")
    assert proj.status == "inherited" and "has no ONNX value of its own" in proj.note, (proj.status, proj.note)
    assert run.prepared.plan.calls[proj.index].inputs[0].endswith("::absorbed")


def test_an_input_shape_cannot_pair_is_paired_by_content(explained):
    """``positions(mask, ids)``: its nodes read the ids; the value is the ids' (equal on sample 0), not the mask's."""
    _, _, run, result, _ = explained("positions_floor", "torchscript")
    pos = next(L for L in result.layers if L.module == "body.positions")
    assert list(run.prepared.plan.calls[pos.index].inputs) == [1]
    assert next(L for L in result.layers if L.module == "body").status == "inherited"


@pytest.mark.parametrize("form", params(CLEAN, FAST))
def test_a_clean_unit_stays_clean(explained, form):
    _, _, _, result, exp = explained(*form)
    assert result.verdict == "ok" and [f for f in exp.findings if f.severity == "error"] == []
