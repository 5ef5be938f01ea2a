"""Observer effect, --exporter auto, keyword inputs, dtype-aware tolerance, unattributed layers."""
from __future__ import annotations

from pathlib import Path

import pytest

from drifttui.core.result import DRIFT, INHERITED, UNATTRIBUTED, Config
from drifttui.core.pipeline import run_once
from drifttui.errors import ModelError

HERE = Path(__file__).resolve().parent
C = HERE / "constructed.py"


def _run(fn, inputs, **kw):
    kw.setdefault("samples", 2)
    return run_once(Config(model=f"{C}:{fn}", inputs=f"{C}:{inputs}", **kw)).result


@pytest.fixture(scope="module")
def observed():
    return _run("half_chain", "vec64", exporter="dynamo")


def test_observer_effect_is_detected_bisected_and_compared_apart(observed):
    obs = observed.observer
    assert obs is not None and obs.checked and not obs.identical and obs.max_abs > 0
    assert set(obs.values) == {"mul_1", "_to_copy_1"}          # s2's and back's values, nothing else
    moved = {observed.layers[i].module for i in obs.layers}
    assert moved == {"s2", "back"}
    assert len(observed.windows) == 2                           # they are compared in a window of their own
    assert any("observer effect" in n for n in observed.notes)
    assert all("observer effect" in observed.layers[i].note for i in obs.layers)


def test_observer_check_runs_and_is_identical_on_a_plain_float32_model():
    r = _run("branchy", "vec8", exporter="torchscript")
    assert r.observer is not None and r.observer.checked and r.observer.identical and not r.observer.values
    assert "observer" in r.timings


def test_exporter_auto_falls_back_to_torchscript_with_a_note():
    r = _run("branchy", "vec8")       # the default is auto
    assert r.config.exporter == "auto"
    assert r.environment.exporter == "torchscript"
    note = next(n for n in r.notes if n.startswith("--exporter auto"))
    assert "dynamo export failed" in note and "GuardOnDataDependent" in note
    assert r.verdict == "ok" and r.coverage.unmapped == 0


def test_explicit_exporter_stays_strict():
    with pytest.raises(ModelError, match="dynamo export failed"):
        _run("branchy", "vec8", exporter="dynamo")


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_dict_inputs_are_keyword_arguments_for_both_exporters(exporter):
    r = _run("named", "named_in", exporter=exporter)
    assert r.environment.exporter == exporter
    assert r.verdict == "ok" and r.coverage.unmapped == 0 and r.coverage.mapped >= 2


def test_a_float32_layer_after_a_float16_one_is_held_to_its_precision_budget():
    """A float16 Linear (a) feeds a float32 one (b): the file holds float16 weights, so it is a
    reduced-precision deployment (issue 19) and b's output is judged by the budget of every
    reduced node computed before it: within budget, no drift blamed on b.  (Before the precision
    budget, b failed float32's rule with no owner: `unattributed`.)"""
    models = HERE.parent / "models.py"
    r = run_once(Config(model=f"{models}:half_linear", inputs=f"{models}:inputs_8", samples=2, exporter="dynamo")).result
    by = {L.module: L for L in r.layers}
    assert by["a"].status == "ok" and by["b"].status == "ok"
    assert by["b"].budget is not None and not by["b"].budget.over
    assert r.precision is not None and r.precision.verdict == "within budget"
    assert r.drift_origin is None and not [L for L in r.layers if L.status in (DRIFT, INHERITED, UNATTRIBUTED)]


def test_effective_rtol_widens_only_low_precision():
    import numpy as np
    import torch

    from drifttui.core.base.tolerance import K_EPS, effective_rtol

    assert effective_rtol(1e-4, torch.zeros(1), np.zeros(1, np.float32)) == 1e-4
    assert effective_rtol(1e-4, torch.zeros(1, dtype=torch.float16)) == K_EPS * 2.0 ** -10
    assert effective_rtol(1e-4, torch.zeros(1, dtype=torch.bfloat16)) == K_EPS * 2.0 ** -7
    assert effective_rtol(1.0, np.zeros(1, np.float16)) == 1.0
