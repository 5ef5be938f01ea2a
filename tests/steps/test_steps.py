"""Each step on a model that triggers it and on the clean model."""
from __future__ import annotations

import pytest

from drifttui.core.result import Origin
from drifttui.core.explain.steps import TITLES
from drifttui.core.explain.steps import determinism, tolerance


def step(result, n):
    return next(s for s in result.steps if s.step == n)


def test_six_steps_with_titles(diagnosed):
    r = diagnosed("clean")
    assert [s.step for s in r.steps] == [1, 2, 3, 4, 5, 6]
    assert [s.title for s in r.steps] == [TITLES[k] for k in range(1, 7)]
    assert all(s.verdict in ("pass", "fail", "inconclusive", "skipped") for s in r.steps)


def test_clean_steps_do_not_fail(diagnosed):
    r = diagnosed("clean")
    assert {s.step: s.verdict for s in r.steps if s.verdict in ("fail", "inconclusive")} == {}


# --- step 1 -------------------------------------------------------------------------------
def test_step1_sees_in_place_mutation_and_real_origin(diagnosed):
    clean = step(diagnosed("clean"), 1)
    mutated = {m["module"] for m in clean.evidence["mutated_in_place"]}
    assert {"bn", "conv2"} <= mutated          # ReLU(inplace=True) after bn, z += y on conv2's output
    s = step(diagnosed("eps"), 1)
    assert s.verdict == "pass" and s.evidence["origin"]["cloned_fails"]


def test_step1_flags_an_origin_that_is_a_capture_artifact(run):
    engine, result = run("clean")
    bn = next(L for L in result.layers if L.module == "bn")
    fake = result.with_(verdict="drift", drift_origin=Origin(bn.index, "bn", bn.cls, 0, bn.onnx_values,
                                                             bn.op_types, 1.0, 1.0, None, 0))
    s = engine.step(1, fake)
    assert s.verdict == "fail", s.summary
    assert s.evidence["origin"]["uncloned_fails"] and not s.evidence["origin"]["cloned_fails"]
    assert s.layers[0] == bn.index


# --- step 2 -------------------------------------------------------------------------------
def test_step2_zero_input(diagnosed):
    s = step(diagnosed("gamma"), 2)
    assert s.verdict == "fail" and s.evidence["zero_origin"] == "ls"
    assert step(diagnosed("clean"), 2).verdict == "pass"


# --- step 3 -------------------------------------------------------------------------------
def test_step3_origin_node(diagnosed):
    s = step(diagnosed("eps"), 3)
    assert s.verdict == "fail"
    assert any(h["op_type"] == "LayerNormalization" for h in s.evidence["hazards"])
    assert s.evidence["findings"][0]["check"] == "normalization"
    assert set(s.evidence["opt_levels"]["levels"]) == {"disable", "basic", "extended", "all"}
    assert s.evidence["nodes"][0]["attributes"]["epsilon"] == pytest.approx(1e-2)
    assert step(diagnosed("clean"), 3).verdict == "skipped"


# --- step 4 -------------------------------------------------------------------------------
def test_step4_origin_moves_earlier(diagnosed):
    r = diagnosed("twodrift")
    assert r.drift_origin.module == "norm.ln"
    s = step(r, 4)
    assert s.verdict == "fail", s.summary
    rows = {row["tolerance"]: row["origin"] for row in s.evidence["sweep"]}
    assert rows[1e-4] == "norm.ln" and rows[1e-5] == "bn"
    assert step(diagnosed("eps"), 4).verdict == "pass"
    assert step(diagnosed("clean"), 4).verdict == "pass"


def test_step4_judge_ignores_noise_floor():
    rows = [{"tolerance": t, "verdict": "drift", "origin": o, "origin_layer": i}
            for t, o, i in [(1e-3, "b", 5), (1e-4, "b", 5), (1e-5, "b", 5), (1e-6, "a", 1), (1e-7, "a", 1)]]
    verdict, summary, _ = tolerance.judge(rows, 5, "b")
    assert verdict == "pass" and "noise" in summary


# --- step 5 -------------------------------------------------------------------------------
def test_step5_clean_is_reproducible(diagnosed):
    s = step(diagnosed("clean"), 5)
    assert s.verdict == "pass"
    assert set(s.evidence["variance_max_abs"]) == {"torch_nondeterministic", "torch_deterministic",
                                                  "ort_default_threads", "ort_single_thread"}
    assert step(diagnosed("eps"), 5).verdict == "pass"   # the drift persists: maths


def test_step5_judge():
    zero = {"torch": 0.0, "ort": 0.0}
    assert determinism.judge(True, False, zero, 1e-4)[0] == "fail"            # drift vanishes
    assert determinism.judge(False, False, {"torch": 1e-3}, 1e-4)[0] == "fail"  # not reproducible
    assert determinism.judge(True, True, {"ort": 1e-7}, 1e-4)[0] == "inconclusive"
    assert determinism.judge(True, True, zero, 1e-4)[0] == "pass"


# --- step 6 -------------------------------------------------------------------------------
def test_step6_custom_module(diagnosed):
    s = step(diagnosed("gamma"), 6)
    assert s.verdict == "fail" and "ls.gamma" in s.summary
    attr = s.evidence["tensor_attributes"][0]
    assert attr["module"] == "ls" and attr["equal"] is False
    assert any("shape" in h["why"] for h in s.evidence["source_hazards"])
    clean = step(diagnosed("clean"), 6)
    assert clean.verdict == "pass" and "ls.gamma" in clean.summary
    assert clean.evidence["folded_weights_checked"] >= 1


def test_step6_catches_changed_weights(diagnosed):
    s = step(diagnosed("twodrift"), 6)
    assert s.verdict == "fail"
    assert s.evidence["param_value_diffs"][0]["param"] == "conv1.weight"
