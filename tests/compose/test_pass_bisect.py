"""Pass bisect inside ONNX Runtime on real sessions (make test): the transformer named, verified
alone, the settings that avoid it; the bisection's cost."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from drifttui.core.pipeline import Pipeline
from drifttui.core.result import Config
from drifttui.core.runtime.passes import ort_passes
from drifttui.core.runtime.passes.bisect_core import bisect
from drifttui.core.runtime.passes.pass_bisect import Probe, bisect_ort, offline_check
from tests.compose import models as M
from tests.compose import pipelines as P

# NchwcTransformer's blocked Conv sums in another order: ~2e-7 on this model, where level disable
# matches torch to the bit (models.py); a tolerance between the two
TIGHT = dict(atol=1e-7, rtol=0.0)


def _cfg(**kw) -> Config:
    return Config(model=M.spec("padconv"), inputs=M.INPUTS["padconv"], samples=2, exporter="torchscript",
                  **{**TIGHT, **kw})


@pytest.mark.parametrize("per_layer_level", ["all", "disable"])
def test_step3_names_the_transformer_and_the_settings(per_layer_level):
    """At --opt-level all the origin's own nodes are bisected; at disable (no origin: the per-layer
    pass agrees) the outputs are.  Either way: NchwcTransformer, verified by disabling it alone."""
    pipe = Pipeline()
    result = pipe.run(_cfg(opt_level=per_layer_level)).result
    step = pipe.step(3, result)
    ev = step.evidence["opt_levels"]["ort_pass"]
    assert ev["culprits"] == ["NchwcTransformer"] and ev["verified"], ev
    assert ev["level"] == "all" and ev["safe_level"] == "extended"
    assert ev["error_after"] <= TIGHT["atol"] < ev["error_before"]
    assert "NchwcTransformer" in step.summary
    assert 'disabled_optimizers=["NchwcTransformer"]' in step.suggestion
    assert "ORT_ENABLE_EXTENDED" in step.suggestion and "optimization { graph { level: 1 } }" in step.suggestion
    # one line, as every string a front end shows (a line break was escaped to a literal \x0a in the CLI and TUI)
    assert "\n" not in step.suggestion, step.suggestion
    # cost: confirm at the level, ceil(log2 n) halvings, verify alone
    assert ev["runs"] <= math.ceil(math.log2(max(2, len(ev["candidates"])))) + 2


def test_the_transformers_read_from_orts_log_are_the_ones_that_ran(tmp_path):
    src = P.raw("padconv", "torchscript", tmp_path)
    at_all = ort_passes.modified_transformers(str(src), "all")
    assert "NchwcTransformer" in at_all
    assert "NchwcTransformer" not in ort_passes.modified_transformers(str(src), "extended")
    assert "NchwcTransformer" not in ort_passes.modified_transformers(str(src), "all", ["NchwcTransformer"])


def _probe(src: Path) -> Probe:
    import torch

    model = M.padconv()
    torch.manual_seed(1)
    xs = [torch.randn(1, 4, 8, 8) for _ in range(2)]
    name = ort_passes.session(str(src), "disable").get_inputs()[0].name
    out = ort_passes.session(str(src), "disable").get_outputs()[0].name
    return Probe(str(src), [{name: x.numpy()} for x in xs], [{out: model(x).detach().numpy()} for x in xs],
                 where="the model outputs", **TIGHT)


def test_offline_file_reoptimised_without_the_pass_loses_the_drift(tmp_path):
    """A file saved by ORT's offline optimizer at level all: the raw file optimised again with the
    named pass disabled no longer drifts, the one optimised as deployed does."""
    src = P.raw("padconv", "torchscript", tmp_path)
    probe = _probe(src)
    res = bisect_ort(probe, "all", "extended")
    assert res.culprits == ["NchwcTransformer"] and res.verified
    off = offline_check(str(src), probe, "all", res.culprits, tmp_path)
    assert off["as_deployed"]["drifts"] and not off["without"]["drifts"] and off["drift_gone"]


def test_a_level_with_no_drift_names_nothing(tmp_path):
    res = bisect_ort(_probe(P.raw("padconv", "torchscript", tmp_path)), "extended")
    assert not res.reproduced and res.culprits == [] and "within the tolerance" in res.reason


@pytest.mark.parametrize("n,culprit", [(1, 0), (5, 3), (17, 16), (40, 7)])
def test_bisect_finds_one_culprit_in_log2_runs(n, culprit):
    names = [f"p{i}" for i in range(n)]
    s = bisect(lambda off: names[culprit] not in off, names)
    assert s.culprits == [names[culprit]] and s.verified
    assert s.runs <= math.ceil(math.log2(n)) + 1


def test_bisect_finds_two_passes_that_each_cause_the_drift():
    names = [f"p{i}" for i in range(12)]
    s = bisect(lambda off: not {"p2", "p9"} <= set(off), names)
    assert sorted(s.culprits) == ["p2", "p9"] and s.verified


def test_bisect_says_when_no_pass_removes_the_drift():
    s = bisect(lambda off: True, [f"p{i}" for i in range(8)])
    assert not s.verified


def test_step3_on_a_file_saved_by_the_offline_optimizer(tmp_path):
    """--onnx ORT's offline file, --reference-onnx the raw export: step 3 finds the level and the
    pass that make the drift from the reference, and the reference optimised without it is clean."""
    raw = P.raw("padconv", "torchscript", tmp_path)
    dep = P.ort_offline("all", raw, tmp_path / "all.onnx")
    pipe = Pipeline()
    result = pipe.run(_cfg(onnx=str(dep), reference_onnx=str(raw), output_opt_level="disable")).result
    step = pipe.step(3, result)
    ev = step.evidence["opt_levels"]["ort_pass"]
    assert ev["culprits"] == ["NchwcTransformer"] and ev["offline"]["drift_gone"]
    assert "NchwcTransformer" in step.summary and "disabled_optimizers" in step.suggestion
