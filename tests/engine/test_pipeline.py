"""The staged pipeline: re-deciding equals recomputing, and reruns reuse what did not change."""
import dataclasses
import os

import numpy as np
import pytest

from drifttui.core.base.aggregate import Aggregate

from drifttui.core.base.metrics import Stats, compare
from drifttui.core.result import FAIL_COLUMNS, Config

# a drifting example (LayerNorm epsilon), deterministic so that two fresh captures agree bit for bit
BASE = Config(model="example:transformer-ln-eps", example="transformer-ln-eps", samples=6, deterministic=True)
TOLERANCES = [(1e-7, 0.0), (1e-5, 1e-5), (1e-4, 1e-4), (3e-3, 0.0), (1e-2, 1e-3), (1.0, 1.0)]


def _view(r):
    """Everything decide writes or a rerun could change, as plain data."""
    o = r.drift_origin
    return {
        "verdict": r.verdict,
        "origin": o and (o.layer, o.module, o.max_abs, o.local_max_abs, o.worst_sample),
        "layers": [(L.status, L.metrics, L.local, L.fails, L.note) for L in r.layers],
        "outputs": [(x.metrics, x.top1_agreement) for x in r.outputs],
        "coverage": r.coverage,
        "notes": r.notes,
        "samples": r.samples,
        "tolerance": r.tolerance,
    }


@pytest.fixture(scope="module")
def pipeline():
    from drifttui.core.pipeline import Pipeline

    return Pipeline()


@pytest.fixture(scope="module")
def redecided(pipeline):
    """The results of one capture decided at every tolerance (the first run captures, the rest decide)."""
    out = {}
    for atol, rtol in TOLERANCES:
        out[(atol, rtol)] = pipeline.run(dataclasses.replace(BASE, atol=atol, rtol=rtol)).result
    return out


def test_tolerance_change_decides_only(redecided):
    first, *rest = redecided.values()
    assert first.timings["capture_reused"] == 0 and first.timings["export"] > 0
    for r in rest:
        assert r.timings["prepare_reused"] == 1 and r.timings["capture_reused"] == 1
        assert r.timings["export"] == 0 and r.timings["samples"] == 0
        assert r.timings["decide"] < 0.1, r.timings
    # the tolerances were chosen so that the decision really changes
    assert len({tuple(L.status for L in r.layers) for r in redecided.values()}) >= 3
    assert {r.verdict for r in redecided.values()} == {"ok", "drift"}


@pytest.mark.parametrize("tol", [TOLERANCES[1], TOLERANCES[3], TOLERANCES[4]])
def test_redeciding_equals_a_fresh_run_at_that_tolerance(redecided, tol):
    from drifttui.core.pipeline import run_once

    fresh = run_once(dataclasses.replace(BASE, atol=tol[0], rtol=tol[1])).result
    assert _view(redecided[tol]) == _view(fresh)


def test_every_layer_says_which_metric_fails(redecided):
    strict, loose = redecided[TOLERANCES[0]], redecided[TOLERANCES[-1]]
    for r in (strict, loose):
        for L in r.layers:
            assert set(L.fails) == set(FAIL_COLUMNS)
            if L.status in ("drift", "inherited"):
                assert L.fails["max_abs"] and L.fails["max_rel"]
            if L.status == "ok":
                assert not L.fails["max_abs"] and not L.fails["local"]
            if L.status == "drift" and L.local is not None:
                assert L.fails["local"]
    assert not any(any(L.fails.values()) for L in loose.layers)
    origin = strict.layers[strict.drift_origin.layer]
    assert origin.fails["local"]


def test_toggles_capture_again_without_exporting(pipeline, redecided):
    first = next(iter(redecided.values()))
    prepared = pipeline.last.prepared
    for change in ({"zero_input": True}, {"deterministic": False}, {"opt_level": "all"}, {"samples": 3},
                   {"seed": 4}, {"layer_samples": "all"}):
        r = pipeline.run(dataclasses.replace(BASE, **change)).result
        assert pipeline.last.prepared is prepared, change
        assert r.timings["export"] == 0 and r.timings["prepare_reused"] == 1, change
        assert r.timings["capture_reused"] == 0 and r.timings["samples"] > 0, change
        assert r.config == dataclasses.replace(BASE, **change)
        if change == {"deterministic": False}:
            # toggled back: the base capture is still cached, so decide only, and the same answer
            again = pipeline.run(BASE).result
            assert again.timings["capture_reused"] == 1
            assert _view(again) == _view(redecided[(BASE.atol, BASE.rtol)])
    assert first.timings["prepare_reused"] == 0


def test_a_new_model_or_an_edited_file_prepares_again(tmp_path, pipeline):
    from drifttui.core.pipeline import Pipeline

    p = Pipeline()
    a = p.run(Config(model="example:unet", example="unet", samples=2))
    onnx_file = tmp_path / "unet.onnx"
    from drifttui.core.onnx.graph import full_model

    onnx_file.write_bytes(full_model(a.prepared.index).SerializeToString())    # the run's proto keeps no weights
    cfg = Config(model="example:unet", example="unet", onnx=str(onnx_file), samples=2)
    b = p.run(cfg)
    assert b.prepared is not a.prepared
    assert p.run(cfg).prepared is b.prepared
    st = os.stat(onnx_file)
    os.utime(onnx_file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))     # the user re-exported it
    c = p.run(cfg)
    assert c.prepared is not b.prepared and c.result.timings["prepare_reused"] == 0
    d = p.run(dataclasses.replace(cfg, onnx=None, exporter="torchscript"))
    assert d.result.timings["export"] > 0


def test_local_engine_is_transparent_and_steps_run_after_a_tolerance_change():
    from drifttui.api import Config as ApiConfig, LocalEngine

    assert ApiConfig is Config
    engine = LocalEngine()
    cfg = Config(model="example:unet-resize", example="unet-resize", samples=3)
    r1 = engine.run(cfg)
    r2 = engine.run(dataclasses.replace(cfg, atol=10.0, rtol=10.0))
    assert r1.verdict == "drift" and r2.verdict == "ok" and r2.timings["capture_reused"] == 1
    prepared = engine._engine()._prepared
    step = engine.step(4, r1)      # the tolerance bisect reruns on the prepared model: no export
    assert engine._engine()._prepared is prepared            # no new Prepared: nothing exported again
    # unet-resize's origin is a Resize with the wrong coordinate mode: an error of order 1, far above
    # every tolerance the bisect tries, so the origin stays put (pass: a real drift, not a tolerance choice)
    origin = r1.drift_origin.module
    assert step.step == 4 and step.verdict == "pass", (step.verdict, step.summary)
    sweep = [s for s in step.evidence["sweep"] if s["tolerance"] >= 1e-5]
    assert sweep and all(s["origin"] == origin and s["verdict"] == "drift" for s in sweep), sweep


# -- the tolerance rule applied to stored statistics is the rule applied to the tensors ---------------
def _pairs(rng, k):
    out = []
    for _ in range(k):
        shape = tuple(int(x) for x in rng.integers(1, 9, size=rng.integers(1, 4)))
        t = (rng.standard_normal(shape) * 10 ** rng.uniform(-3, 3)).astype(np.float32)
        o = t + (rng.standard_normal(shape) * 10 ** rng.uniform(-8, 0)).astype(np.float32)
        if rng.random() < 0.1:
            o.flat[0] = np.nan
        out.append((t, o))
    return out


def test_stats_decide_any_tolerance_exactly():
    rng = np.random.default_rng(7)
    tols = [(0.0, 0.0), (1e-6, 0.0), (0.0, 1e-5), (1e-4, 1e-4), (1e-2, 1e-3), (1.0, 0.0), (0.0, 1.0)]
    for _ in range(60):
        pairs = _pairs(rng, int(rng.integers(1, 4)))
        free = Stats()
        for t, o in pairs:
            free.add(compare(t, o))
        assert free.n_out == 0          # the engine's comparison holds no tolerance-dependent count
        for atol, rtol in tols:
            merged = Stats()
            for t, o in pairs:
                merged.add(compare(t, o, atol, rtol))
            expected = any(_fails_numpy(t, o, atol, rtol) for t, o in pairs)
            assert free.fails_at(atol, rtol) == merged.fails() == expected, (atol, rtol)
            agg = Aggregate()
            agg.add(0, free)
            assert agg.fails(atol, rtol) == expected


def _fails_numpy(t, o, atol, rtol):
    """The documented rule, straight from the tensors: an element fails when |o - t| > atol + rtol *
    max|t| (each compared tensor at its own scale); a NaN on one side fails."""
    t64, o64 = t.astype(np.float64), o.astype(np.float64)
    if np.isnan(t64).any() != np.isnan(o64).any() or np.isnan(o64).any():
        return True
    bound = atol + rtol * float(np.abs(t64).max())
    return bool((np.abs(o64 - t64) > bound).any())


def test_spread_is_the_share_of_elements_carrying_the_error():
    t = np.zeros(100, np.float32)
    o = t.copy()
    o[:5] = 1.0
    o[5:10] = 0.4
    assert compare(t, o).spread == pytest.approx(0.05)
    assert compare(t, t).spread == 0.0


COUNTING_MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 4)
        self.forwards = 0

    def forward(self, x):
        self.forwards += 1
        return self.b(torch.relu(self.a(x)))


def build():
    torch.manual_seed(0)
    return Net().eval()
'''


def test_a_run_costs_one_torch_forward_per_sample_plus_the_trace_and_the_layer_passes(tmp_path):
    """With --onnx (no export): the trace on sample 0, a per-layer pass on each of the 3 layer samples
    (sample 0's also gives its output-pass outputs, and the trace's are the determinism check's
    second forward), and one output-pass forward on each other sample: 1 + 3 + (N - 1) (no module of the
    model reads its own hooks: no plain forward to check them, prepare/hook_routing.py)."""
    import torch

    from drifttui.core.pipeline import run_once

    (tmp_path / "m.py").write_text(COUNTING_MODEL)
    spec = f"{tmp_path / 'm.py'}:build"
    net = __import__("importlib").util.spec_from_file_location("m", tmp_path / "m.py")
    mod = __import__("importlib").util.module_from_spec(net)
    net.loader.exec_module(mod)
    onnx_path = tmp_path / "m.onnx"
    torch.onnx.export(mod.build(), (torch.randn(1, 8),), str(onnx_path), dynamo=False)
    n = 6
    run = run_once(Config(model=spec, inputs="shape:1x8", onnx=str(onnx_path), samples=n))
    assert run.result.verdict == "ok" and any("compared on 3 of the 6 samples" in note for note in run.result.notes)
    assert run.prepared.model.forwards == 1 + 3 + (n - 1)
