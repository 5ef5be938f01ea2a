"""Stage bisect on real pipelines (make test-deploy): each test builds a pipeline with the real
tools, one stage of which drifts, and asserts the stage and the pass named."""
from __future__ import annotations

import pytest

from drifttui.core.compose.stage_bisect import bisect_stages
from drifttui.core.result import Config
from tests.compose import models as M
from tests.compose import pipelines as P
from tests.deploy.conftest import needs

pytestmark = pytest.mark.deploy
# a tolerance between bit-exact (the raw exports of these models at level disable) and one more
# rounding (a fold); the deployment runs the files at level disable
TIGHT = dict(atol=1e-7, rtol=0.0, output_opt_level="disable")


def _cfg(name: str, **kw) -> Config:
    return Config(**{"model": M.spec(name), "inputs": M.INPUTS[name], "samples": 3, "exporter": "torchscript", **kw})


def test_onnxsim_stage_and_its_pass(tmp_path):
    needs("onnxsim")
    raw = P.raw("convmul", "torchscript", tmp_path)
    res = bisect_stages(_cfg("convmul", **TIGHT), [str(raw), str(P.onnxsim(raw, tmp_path / "sim.onnx"))])
    assert res.first == 1 and not res.stages[0].drifts
    assert res.stages[1].vs_previous["fails"]
    assert res.sim["tool"] == "onnxsim" and res.sim["culprit"] == "fuse_mul_into_conv" and res.sim["verified"]
    assert "skipped_optimizers=['fuse_mul_into_conv']" in res.sim["setting"]


def test_onnxslim_stage_and_its_pass_from_python(tmp_path):
    """The Python API: an in-memory model and samples."""
    import torch

    import drifttui

    needs("onnxslim")
    raw = P.raw("convadd", "torchscript", tmp_path)
    stages = [raw, P.onnxslim(raw, tmp_path / "slim.onnx")]
    res = drifttui.bisect(M.convadd(), stages, inputs=lambda i: torch.randn(1, 4, 8, 8), samples=3,
                          exporter="torchscript", **TIGHT)
    assert res.first == 1
    assert res.sim["tool"] == "onnxslim" and res.sim["culprit"] == "pattern:FusionConvAdd" and res.sim["verified"]


def test_ort_offline_stage_names_the_transformer_and_reoptimises_without_it(tmp_path):
    raw = P.raw("padconv", "torchscript", tmp_path)
    stages = [raw, P.ort_offline("extended", raw, tmp_path / "ext.onnx"), P.ort_offline("all", raw, tmp_path / "all.onnx")]
    res = bisect_stages(_cfg("padconv", **TIGHT), [str(s) for s in stages])
    assert res.first == 2 and [s.drifts for s in res.stages] == [False, False, True]
    assert res.passes.culprits == ["NchwcTransformer"] and res.passes.verified
    assert res.passes.offline["drift_gone"]
    assert 'disabled_optimizers=["NchwcTransformer"]' in res.passes.settings["session_disabled"]


def test_float16_stage_only(tmp_path):
    """Clean through onnxslim, drifts at the float16 stage (activations past 65504), which check
    judges by its precision budget."""
    needs("onnxslim")
    needs("onnxconverter_common")
    raw = P.raw("wide", "torchscript", tmp_path)
    slim = P.onnxslim(raw, tmp_path / "slim.onnx")
    half = P.float16(slim, tmp_path / "fp16.onnx")
    res = bisect_stages(_cfg("wide", samples=2), [str(raw), str(slim), str(half)], explain=False)
    assert [s.drifts for s in res.stages] == [False, False, True]
    assert res.first == 2 and res.stages[2].result.precision.format.startswith("float16")
    assert res.origin is not None


def test_clean_pipeline_names_no_stage(tmp_path):
    needs("onnxsim")
    raw = P.raw("cnn", "torchscript", tmp_path)
    sim = P.onnxsim(raw, tmp_path / "sim.onnx")
    ext = P.ort_offline("extended", sim, tmp_path / "ext.onnx")
    res = bisect_stages(_cfg("cnn"), [str(raw), str(sim), str(ext)])
    assert res.first is None and "no stage drifts" in res.summary
    assert res.counts["output_passes"] == 3 and res.counts["per_layer_passes"] == 3


def test_a_file_clean_as_written_that_ort_moves_at_run_time(tmp_path):
    """The deployment runs the raw export at ORT level all: the first stage drifts, ORT's session
    optimizer does it, and the pass is named in the file itself."""
    raw = P.raw("padconv", "torchscript", tmp_path)
    res = bisect_stages(_cfg("padconv", atol=1e-7, rtol=0.0), [str(raw), str(raw)], explain=False)
    assert res.first == 0
    assert res.passes.culprits == ["NchwcTransformer"] and res.passes.verified
