"""The synthetic result generator is deterministic, well-formed and round-trips JSON."""
from __future__ import annotations

import json

from drifttui.core.result import DRIFT, FUSED, INHERITED, NOT_EXPORTED, Result, UNMAPPED
from drifttui.testing.synthetic import synthetic_result


def test_deterministic_and_roundtrip():
    a, b = synthetic_result(120, seed=3), synthetic_result(120, seed=3)
    assert a == b
    assert Result.from_dict(json.loads(json.dumps(a.to_dict()))) == a


def test_tree_shape_statuses_and_origin():
    r = synthetic_result(200)
    assert len(r.layers) == 200
    for i, layer in enumerate(r.layers):
        assert layer.index == i
        assert layer.parent is None or layer.parent < i
        assert layer.depth == (0 if layer.parent is None else r.layers[layer.parent].depth + 1)
    statuses = {l.status for l in r.layers}
    assert {DRIFT, INHERITED, FUSED, NOT_EXPORTED, UNMAPPED} <= statuses
    o = r.drift_origin
    assert r.verdict == "drift" and r.layers[o.layer].status == DRIFT
    assert any(l.status == INHERITED for l in r.layers[o.layer + 1:])
    assert [s.step for s in r.steps] == [1, 2, 3, 4, 5, 6] and r.findings


def test_origin_argument_and_no_drift():
    r = synthetic_result(100, origin=30)
    assert r.drift_origin.layer >= 30 and r.layers[r.drift_origin.layer].metrics is not None
    clean = synthetic_result(100, drift=False)
    assert clean.verdict == "ok" and clean.drift_origin is None
