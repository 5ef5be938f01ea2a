"""Integer values a call computes itself are judged exactly (decide/integer_steps.py).  Batch 47A's LayoutLM box
heads: one unit on an int64 coordinate of scale ~600 passed the call's float16 budget, the embeddings fed torch's
boxes agreed, and every failing layer was ``unattributed``: no origin.  A whole step is no rounding: the call whose
own integers step is the origin, and its cause (ONNX Runtime's dropped float16 rounding) verifies."""
from __future__ import annotations

from pathlib import Path

import pytest

from drifttui.core.base.metrics import Stats, compare
from drifttui.core.decide.integer_steps import integer_steps
from drifttui.core.pipeline import run_once
from drifttui.core.result import DRIFT, INHERITED, UNATTRIBUTED, Config

M = Path(__file__).resolve().parent / "integer_models.py"


def _run(fn: str, exporter: str):
    return run_once(Config(model=f"{M}:{fn}", inputs=f"{M}:rows", exporter=exporter, samples=3, seed=7)).result


def test_compare_marks_integer_values_and_a_step_past_atol():
    import torch
    st = compare(torch.tensor([580, 3]), torch.tensor([581, 3]).numpy())
    assert st.integer and not compare(torch.tensor([1.5]), torch.tensor([1.5]).numpy()).integer
    assert integer_steps({4: [(7, st)], 5: [(2, compare(torch.tensor([1]), torch.tensor([1]).numpy()))]}, 1e-4) \
        == {4: 7}
    assert integer_steps({4: [(7, st)]}, atol=2.0) == {}            # the user's atol holds a unit
    assert integer_steps({4: [(7, Stats(max_abs=3.0))]}, 1e-4) == {}    # a float value: its budget decides


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_call_whose_own_integers_step_is_the_origin(exporter):
    r = _run("own_boxes", exporter)
    body = next(L for L in r.layers if L.module == "body")
    assert r.drift_origin is not None and r.drift_origin.module == "body", [(L.module, L.status) for L in r.layers]
    assert body.status == DRIFT and body.local is not None and body.local.max_abs.worst >= 1.0
    assert body.local.max_rel.worst < 2e-3          # inside the float16 budget by size: only the step names it
    assert {L.module: L.status for L in r.layers if L.module.startswith("body.look")} == \
        {"body.look": INHERITED, "body.look.emb": INHERITED}
    assert any("origin by its integers" in n for n in r.notes)
    assert not any(L.status == UNATTRIBUTED for L in r.layers)


def test_a_step_crossed_by_upstream_noise_stays_unattributed():
    r = _run("upstream_boxes", "torchscript")
    assert r.verdict == "drift" and r.drift_origin is None
    assert next(L for L in r.layers if L.module == "body").status == UNATTRIBUTED
    assert any("integer step" in n for n in r.notes)
