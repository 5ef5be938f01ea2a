"""Issue 30 point 6: a module whose output the exporter absorbed into its reader (a ``.t()`` folded
into the reading Gemm) is split from that reader at the value it hands on, seen through the view
(``core/prepare/plan/absorbed.py``): the origin is the module whose own computation differs, never
the reader fed its values, and a clean module whose square ``.t()`` was absorbed is not compared
with its own transpose.  Real exporters, real ONNX Runtime, deep models (tests/causes/absorbed_forms.py).
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
SPEC = f"{HERE / 'absorbed_forms.py'}"

# (model, exporter) -> (origin, class, words of the headline)
DRIFTS = {
    ("floor_t", "torchscript"): ("body.absorbed", "dtype", "truncates towards zero"),
    ("signbit_t", "dynamo"): ("body.absorbed", "lowering", "aten.signbit"),
    # a weight module constant-folded into one constant its parent reads: no node of its own at all
    ("tied_floor", "torchscript"): ("body.wt", "lowering", "the file holds body.wt's result as the constant"),
    ("tied_signbit", "dynamo"): ("body.wt", "lowering", "aten.signbit"),
}
CLEAN = [("clean_sq", "torchscript"), ("clean_sq", "dynamo"), ("relu_t", "torchscript"), ("relu_t", "dynamo"),
         ("tied_floor", "dynamo")]
FAST = {("floor_t", "torchscript"), ("clean_sq", "torchscript"), ("tied_floor", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    import torch

    from drifttui.core.result import Config
    from tests.causes import absorbed_forms
    from tests.causes.conftest import explained_run

    root = tmp_path_factory.mktemp("absorbed")
    cache: dict[tuple, Any] = {}

    def go(model: str, exporter: str) -> Any:
        if (model, exporter) not in cache:
            path = root / f"{model}-{exporter}.onnx"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(getattr(absorbed_forms, model)(), (absorbed_forms.rows_inputs(),), str(path),
                                  dynamo=exporter == "dynamo")
            cfg = Config(model=f"{SPEC}:{model}", onnx=str(path), inputs=f"{SPEC}:rows_inputs", samples=3)
            cache[(model, exporter)] = explained_run(cfg)
        return cache[(model, exporter)]

    return go


def _params(forms: Any) -> list[Any]:
    return [pytest.param(f, id=f"{f[0]}-{f[1]}", marks=() if f in FAST else pytest.mark.drifts) for f in forms]


@pytest.mark.parametrize("form", _params(DRIFTS))
def test_the_absorbed_module_is_the_origin_verified_and_repaired(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    origin, cls, words = DRIFTS[form]
    engine, cfg, run, result, exp = explained(*form)
    assert len(run.prepared.calls) >= 20
    assert result.verdict == "drift" and result.drift_origin.module == origin
    statuses = {L.module: L.status for L in result.layers}
    assert [m for m, st in statuses.items() if st == "drift"] == [origin], statuses   # never the reader
    head = exp.findings[0]
    assert (head.module, head.check, head.verified) == (origin, cls, True), (head.check, head.message)
    assert words in head.message, head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None and fixed.applied
    # what the user gets: no drifttui round trip left (a graft's way back to the file's layout stays,
    # named after its value)
    assert not any(n.name.rsplit("/", 1)[-1].startswith("drifttui_") for n in fixed.model.graph.node)
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


@pytest.mark.parametrize("form", _params(CLEAN))
def test_clean_absorbed_views_pass(explained, form):
    _, _, run, result, exp = explained(*form)
    assert result.verdict == "ok" and result.drift_origin is None, [(L.module, L.status) for L in result.layers]
    assert not [f for f in exp.findings if f.severity == "error"]


def test_the_square_transpose_is_compared_through_its_view(explained):
    """TorchScript folds the square ``.t()`` into mix's Gemm: absorbed's output is its value transposed
    (the plan says so), and mix reads it back through the way back, in mix's own scope."""
    _, _, run, _, _ = explained("clean_sq", "torchscript")
    pr = run.prepared
    by_name = {c.module: c.index for c in pr.calls}
    cm = pr.plan.calls[by_name["body.absorbed"]]
    assert cm.outputs[0].endswith("::absorbed") and "absorbed its last view" in cm.note
    mix = pr.plan.calls[by_name["body.mix"]]
    assert any(pr.index.nodes[n].name.endswith("drifttui_unabsorbed_0") for n in mix.own)
