"""Issue 34, item 1: a baseline cannot switch the gate off.

A baseline whose figures are NaN made every ``new > old * 1.1`` false, and a worse drift passed with
exit 0.  Every figure the gate reads from a baseline is checked (exit 2, the field named), and every
comparison in the gate and in decide is written so that a NaN is never "within".
"""
from __future__ import annotations

import dataclasses
import json
import math
import random

import pytest

from drifttui.core.base.aggregate import Aggregate

from drifttui.core.base.metrics import Stats
from drifttui.errors import InputError
from drifttui.report import json_report
from drifttui.report.gate import Gate, decide
from tests.ci.conftest import classifier_args, run_cli
from tests.ci.test_gate import reports  # noqa: F401  (the module-scoped fixture)

BAD = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"), "negative": -1.0}


def _write(tmp_path, data, name):
    path = tmp_path / name
    path.write_text(json.dumps(data))      # json.dumps writes NaN / Infinity literals, as an editor might
    return str(path)


def _edit(data, where, value):
    """Set (or, value is KeyError, delete) the field at the dotted path ``where`` of a report dict."""
    keys = [int(k) if k.isdigit() else k for k in where.replace("[", ".").replace("]", "").split(".")]
    node = data
    for k in keys[:-1]:
        node = node[k]
    if value is KeyError:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value


FIELDS = ["drift_origin.max_abs", "outputs[0].metrics.max_abs.worst", "tolerance.atol", "tolerance.rtol"]


def test_a_worse_drift_against_a_nan_baseline_is_refused_not_passed(variants, reports, tmp_path):  # noqa: F811
    data = json.loads(reports["flip"].read_text())
    for where in FIELDS:
        for word, value in BAD.items():
            edited = json.loads(json.dumps(data))
            _edit(edited, where, value)
            run = run_cli(classifier_args(variants, "worse", "--baseline", _write(tmp_path, edited, "b.json")))
            assert run.code == 2, (where, word, run.code, run.out, run.err)
            assert where in run.err and ("negative" in run.err if word == "negative" else word in run.err), run.err
            assert "DRIFT" not in run.out       # refused before the run: no report at all
    # every compared figure NaN at once: each "new > old * 1.1" was false, and a worse drift exited 0
    edited = json.loads(json.dumps(data))
    for where in ("drift_origin.max_abs", "outputs[0].metrics.max_abs.worst", "outputs[0].top1_agreement"):
        _edit(edited, where, float("nan"))
    run = run_cli(classifier_args(variants, "worse", "--baseline", _write(tmp_path, edited, "all.json")))
    assert run.code == 2 and "is NaN" in run.err, (run.code, run.err)


def test_a_baseline_figure_of_the_wrong_type_or_missing_is_exit_2_naming_it(variants, reports, tmp_path):  # noqa: F811
    data = json.loads(reports["flip"].read_text())
    for where, value in [("drift_origin.max_abs", "big"), ("drift_origin.max_abs", None),
                         ("drift_origin.max_abs", KeyError), ("outputs[0].top1_agreement", 1.5),
                         ("outputs[0].top1_agreement", "nan"), ("samples", 0), ("samples", "many"),
                         ("outputs[0].fails", "yes"), ("outputs[0].metrics.max_abs.worst", "inf")]:
        edited = json.loads(json.dumps(data))
        _edit(edited, where, value)
        run = run_cli(classifier_args(variants, "worse", "--baseline", _write(tmp_path, edited, "b.json")))
        assert run.code == 2, (where, value, run.out, run.err)
        assert where.rsplit(".", 1)[-1].split("[")[0] in run.err, (where, run.err)


def test_an_origin_without_metrics_keeps_its_nan_and_stays_a_usable_baseline(reports):  # noqa: F811
    # decide writes max |d| NaN for an origin with no metrics (a packed weight that is not the model's):
    # a report drifttui wrote is always a usable baseline
    flip = json_report.read(str(reports["flip"]))
    k = flip.drift_origin.layer
    layers = [dataclasses.replace(L, metrics=None) if L.index == k else L for L in flip.layers]
    base = flip.with_(layers=layers, drift_origin=dataclasses.replace(flip.drift_origin, max_abs=float("nan")))
    assert decide(base, Gate(baseline=base)).exit_code == 0          # the same unmeasured drift: known
    # ... but a run that measures that origin cannot be "within" a NaN
    assert decide(flip, Gate(baseline=base)).exit_code == 1
    # and a NaN where the origin HAS metrics is a damaged baseline
    damaged = flip.with_(drift_origin=dataclasses.replace(flip.drift_origin, max_abs=float("nan")))
    with pytest.raises(InputError, match="drift_origin.max_abs is NaN"):
        Gate(baseline=damaged)


# ---------------------------------------------------------------------------------------------
# Property-style: random NaN / Inf / negative / missing / wrong-type values in every figure the gate
# reads, in the baseline and in the run (seeded: the same cases every run, many of them).

def _figures(result):
    """(setter name, path) of every figure the gate compares, in a Result."""
    paths = ["samples", "tolerance.atol", "tolerance.rtol"]
    if result.drift_origin is not None:
        paths.append("drift_origin.max_abs")
    for i, o in enumerate(result.outputs):
        paths.append(f"outputs[{i}].metrics.max_abs.worst")
        if o.top1_agreement is not None:
            paths.append(f"outputs[{i}].top1_agreement")
    return paths


def _set(result, path, value):
    """A copy of ``result`` with the figure at ``path`` replaced (dataclasses all the way down)."""
    keys = [int(k) if k.isdigit() else k for k in path.replace("[", ".").replace("]", "").split(".")]

    def put(node, keys):
        k = keys[0]
        if isinstance(k, int):
            items = list(node)
            items[k] = put(items[k], keys[1:]) if len(keys) > 1 else value
            return items
        return dataclasses.replace(node, **{k: put(getattr(node, k), keys[1:]) if len(keys) > 1 else value})

    return put(result, keys)


JUNK = [float("nan"), float("inf"), float("-inf"), -1.0, -1e-9, None, "0.5", True, [1.0]]


def test_property_no_bad_baseline_figure_ever_lets_the_gate_pass(reports):  # noqa: F811
    rng = random.Random(34)
    runs = {n: json_report.read(str(reports[n])) for n in ("clean", "flip", "worse", "other")}
    tried = 0
    for _ in range(300):
        base = runs[rng.choice(["flip", "worse", "clean"])]
        run = runs[rng.choice(list(runs))]
        paths = _figures(base)
        bad = base
        changed = []
        for path in rng.sample(paths, rng.randint(1, min(3, len(paths)))):
            junk = [j for j in JUNK if j is not None] if "top1" in path else JUNK   # None: not a classifier
            changed.append((path, rng.choice(junk)))
            bad = _set(bad, *changed[-1])
        with pytest.raises(InputError) as err:
            Gate(rng.choice(["drift", "error", "never"]), baseline=bad)
        assert any(p in str(err.value) for p in paths), str(err.value)
        # a gate built around the check (an object edited after construction) still refuses
        gate = Gate()
        object.__setattr__(gate, "baseline", bad)
        assert decide(run, gate).exit_code == 2
        tried += 1
    assert tried == 300


def test_a_baseline_without_the_top1_agreement_of_a_classifier_output_is_not_of_this_run(reports):  # noqa: F811
    # dropping the figure would switch the top-1 comparison off
    flip = json_report.read(str(reports["flip"]))
    base = _set(flip, "outputs[0].top1_agreement", None)
    decision = decide(flip, Gate(baseline=base))
    assert decision.exit_code == 2 and "top-1 agreement" in decision.usage, decision


def test_property_a_nan_in_the_run_is_never_within(reports):  # noqa: F811
    """A NaN in the run's own figures: the gate against a sound baseline never passes a drift."""
    rng = random.Random(341)
    worse, flip = json_report.read(str(reports["worse"])), json_report.read(str(reports["flip"]))
    for _ in range(100):
        run = worse
        for path in rng.sample(["drift_origin.max_abs", "outputs[0].metrics.max_abs.worst"], rng.randint(1, 2)):
            run = _set(run, path, rng.choice([float("nan"), float("inf")]))
        assert decide(run, Gate(baseline=flip)).exit_code == 1
        top1 = _set(flip, "outputs[0].top1_agreement", float("nan"))
        assert decide(top1, Gate(min_top1=0.5)).exit_code == 1        # a NaN agreement is below any bar


def test_property_decide_never_finds_a_nan_within_the_tolerance():
    rng = random.Random(3434)
    for _ in range(500):
        d, t = rng.choice([float("nan"), rng.random()]), rng.choice([float("nan"), rng.random() * 10])
        atol, rtol = rng.random() * 1e-3, rng.random() * 1e-3
        s = Stats(n=4, max_abs=d, max_t=t)
        agg = Aggregate()
        agg.add(0, s)
        expect = not (d <= atol + rtol * t)       # the rule; NaN on either side fails it
        assert s.fails_at(atol, rtol) is expect and agg.fails(atol, rtol) is expect, (d, t)
        merged = Stats(n=4, max_abs=0.0, max_t=1.0)
        merged.add(s)
        assert merged.fails_at(atol, rtol) is expect


def test_min_top1_nan_or_wrong_type_is_refused():
    for value in (float("nan"), -0.1, 1.5, "0.9", True):
        with pytest.raises(InputError, match="min_top1"):
            Gate(min_top1=value)
    with pytest.raises(ValueError):          # still a ValueError for callers that caught one
        Gate(min_top1=2.0)
    assert math.isclose(Gate(min_top1=0.9).min_top1, 0.9)


def test_property_a_baseline_file_with_random_bad_or_missing_figures_is_refused(reports, tmp_path):  # noqa: F811
    """The JSON route (--baseline FILE, assert_no_drift(baseline=path)): random NaN / Infinity literals,
    their string forms, negatives, wrong types and deleted keys, one to three at a time."""
    from drifttui.report.ci_outputs import _read_baseline

    rng = random.Random(3400)
    sources = {n: json.loads(reports[n].read_text()) for n in ("flip", "worse", "clean")}
    values = [float("nan"), float("inf"), float("-inf"), "nan", "inf", "-inf", -1.0, -0.5, "0.1", None, True,
              [0.1], {"x": 1}, KeyError]
    for k in range(150):
        name = rng.choice(list(sources))
        data = json.loads(json.dumps(sources[name]))
        paths = ["samples", "tolerance.atol", "tolerance.rtol", "outputs[0].metrics.max_abs.worst",
                 "outputs[0].top1_agreement", "outputs[0].fails"]
        if data["drift_origin"] is not None:
            paths.append("drift_origin.max_abs")
        chosen = rng.sample(paths, rng.randint(1, 3))
        for path in chosen:
            value = rng.choice(values)
            if path.endswith("top1_agreement") and value is None:
                value = 1.5                 # null there means "not a classifier": see the mismatch test
            if path.endswith("fails") and value is KeyError:
                value = "yes"               # a missing "fails" reads as false: stricter, not laxer
            _edit(data, path, value)
        path = tmp_path / f"b{k}.json"
        path.write_text(json.dumps(data))
        with pytest.raises(InputError) as err:
            _read_baseline(str(path))
        leaf = {p.rsplit(".", 1)[-1].split("[")[0] for p in chosen}
        assert any(word in str(err.value) for word in leaf), (chosen, str(err.value))
