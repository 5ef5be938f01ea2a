"""The drill-down's engine side (issue 23): per-channel max |torch - onnx| in the capture
(tolerance-free), carried by the Result for the origin and the layers around it, and
``Pipeline.drill`` for any other layer (from the capture it holds, else one per-layer pass on
the layer's worst sample).  Real torch, ONNX and ONNX Runtime on a drift in ONE BatchNorm channel."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drifttui.core.base.aggregate import Aggregate

from drifttui.core.base.metrics import channel_axis_of, compare
from drifttui.core.pipeline import Pipeline
from drifttui.core.result import CHANNELS_AROUND, Config, Result
from drifttui.core.model.examples import BN_CHANNEL, export_bn_channel_drift

_, _, BN, CHANNEL, _ = BN_CHANNEL


def test_compare_channel_max_matches_numpy():
    rng = np.random.default_rng(0)
    t = rng.standard_normal((2, 7, 5, 3)).astype(np.float32)
    o = t + rng.standard_normal(t.shape).astype(np.float32) * 1e-3
    st = compare(t, o, channel_axis=1)
    want = np.abs(t - o).max(axis=(0, 2, 3))
    np.testing.assert_array_equal(st.channels, want)
    assert st.max_abs == float(want.max()) == compare(t, o).max_abs       # same max |d| as before
    feats = compare(t[0, 0], o[0, 0], channel_axis=-1)                      # (5, 3): features last
    np.testing.assert_array_equal(feats.channels, np.abs(t[0, 0] - o[0, 0]).max(axis=0))
    assert channel_axis_of((1, 64, 8, 8)) == 1 and channel_axis_of((1, 16, 64)) == -1
    assert channel_axis_of((1, 16, 64), "BatchNorm1d") == 1 and channel_axis_of((10,)) is None


def test_aggregate_keeps_the_worst_per_channel_over_samples_and_pools_wide_outputs():
    agg = Aggregate()
    a = np.zeros((1, 3000), np.float32)
    b = a.copy()
    b[0, 7] = 0.5
    agg.add(0, compare(a, b, channel_axis=-1))
    b2 = a.copy()
    b2[0, 2999] = 0.25
    agg.add(4, compare(a, b2, channel_axis=-1))
    ch = agg.to_channels()
    assert ch.size == 3000 and ch.group == 3 and len(ch.max_abs) == 1000       # pooled to <= MAX_CHANNELS
    assert ch.max_abs[7 // 3] == 0.5 and ch.max_abs[2999 // 3] == 0.25 and sum(ch.max_abs) == 0.75
    assert ch.samples == [0, 4] and ch.sample_max_abs == [0.5, 0.25]


@pytest.fixture(scope="module")
def one_channel(tmp_path_factory):
    path = export_bn_channel_drift(tmp_path_factory.mktemp("bn-channel"))
    pipe = Pipeline()
    cfg = Config(model="example:resnet18", example="resnet18", onnx=str(path), samples=4)
    return pipe, pipe.run(cfg).result


def test_result_names_the_drifting_channel_and_the_worst_sample(one_channel):
    _, result = one_channel
    origin = result.drift_origin
    assert origin is not None and origin.module == BN
    ch = result.layers[origin.layer].channels
    assert ch is not None and ch.axis == 1 and ch.group == 1 and ch.source == "capture"
    values = np.asarray(ch.max_abs)
    assert int(values.argmax()) == CHANNEL                            # which channel
    assert values.max() > 1000 * np.median(values)                    # ... and only that one
    worst = ch.samples[int(np.argmax(ch.sample_max_abs))]
    assert worst == result.layers[origin.layer].metrics.max_abs.worst_sample   # which sample
    held = [l.index for l in result.layers if l.channels is not None]
    assert origin.layer in held and all(abs(i - origin.layer) <= CHANNELS_AROUND for i in held)
    back = Result.from_dict(json.loads(result.to_json()))             # the --json report carries it
    assert back.layers[origin.layer].channels == ch


def test_drill_from_the_capture_and_from_one_worst_sample_pass(one_channel):
    pipe, result = one_channel
    far = next(l.index for l in result.layers if l.channels is None and l.metrics is not None
               and l.module.startswith("layer4"))
    held = pipe.drill(far, result)
    assert held.source == "capture" and held.size == result.layers[far].output_shapes[0][1]
    origin = result.drift_origin.layer
    fresh = Pipeline().drill(origin, result)                          # no capture held: one pass
    layer = result.layers[origin]
    assert fresh.source == "worst-sample pass" and fresh.samples == [layer.metrics.max_abs.worst_sample]
    assert int(np.argmax(fresh.max_abs)) == CHANNEL
    assert fresh.sample_max_abs[0] == pytest.approx(layer.metrics.max_abs.worst, rel=1e-6)


def test_a_re_decided_result_keeps_its_captures_real_time(one_channel):
    """(issue 23, item 8) the config line and a saved report said 0.0s after a re-decide."""
    pipe, result = one_channel
    again = pipe.run(result.config.__class__(**{**result.config.__dict__, "atol": 1e-3})).result
    t0, t1 = result.timings, again.timings
    assert t1["capture_reused"] == 1 and t1["samples"] == 0          # nothing was captured again
    assert t1["capture_time"] == t0["capture_time"] > 0             # ... but its real time is kept
    assert t1["prepare_time"] == t0["prepare_time"] > 0


def test_drill_on_every_sample_extends_the_layer_samples(one_channel):
    """(issue 35, point 5) the drill-down's per-sample block showed the layer samples only ("3 of
    4"); ``every_sample`` compares the layer on every sample of the run, with the same numbers the
    capture measured on the samples it covered."""
    pipe, result = one_channel
    origin = result.drift_origin.layer
    held = result.layers[origin].channels
    assert held is not None and len(held.samples) < result.samples          # the case to extend
    seen = []
    every = pipe.drill(origin, result, progress=seen.append, every_sample=True)
    assert every.source == "every-sample pass" and every.samples == list(range(result.samples))
    by_sample = dict(zip(every.samples, every.sample_max_abs))
    for s, v in zip(held.samples, held.sample_max_abs):
        assert by_sample[s] == pytest.approx(v, rel=1e-5)                    # the capture's own figures
    assert int(np.argmax(every.max_abs)) == CHANNEL
    assert [p.done for p in seen if p.stage == "drill"][-1] == result.samples
    assert seen[-1].eta == 0
    everything = pipe.run(result.config.__class__(**{**result.config.__dict__, "layer_samples": "all"})).result
    again = pipe.drill(origin, everything, every_sample=True)               # that capture covers them all
    assert again.source == "capture" and again.samples == list(range(result.samples))
