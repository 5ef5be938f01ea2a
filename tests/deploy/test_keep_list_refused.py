"""A keep-in-float32 copy ONNX Runtime refuses to load (issue 30, a known gap of session 32): the search said
nothing and crashed on the exception.  Now the refused copy is said (its layers and ONNX Runtime's line), and the
next candidate is tried.  heavy_cnn's int8 QOperator file (over budget on every CPU: test_precision_exclusions.py),
real ONNX Runtime; the first copy the search checks is made one ONNX Runtime refuses (an Add binding float to int64,
as a keep-list that left one input unconverted would), the later ones are checked as they are."""
from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, feeds_of, int8_qoperator, local_spec

SAMPLES = 4


def _refused(model):
    """``model`` with a node ONNX Runtime refuses at load (an Add of a float and an int64 value)."""
    bad = onnx.ModelProto()
    bad.CopyFrom(model)
    g = bad.graph
    g.initializer.append(helper.make_tensor("refused::one", TensorProto.INT64, [], [1]))
    g.node.append(helper.make_node("Add", [g.input[0].name, "refused::one"], ["refused::sum"], name="refused"))
    return bad


@pytest.fixture(scope="module")
def over_budget(tmp_path_factory):
    needs("onnxruntime.quantization")
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    d = tmp_path_factory.mktemp("refused")
    raw = export_local("heavy_cnn", "img32", "torchscript", d / "raw")
    q = int8_qoperator(raw, d / "qop.onnx", feeds_of("img32", onnx.load(str(raw)).graph.input[0].name), n=SAMPLES)
    cfg = Config(model=local_spec("heavy_cnn"), inputs=local_spec("img32"), onnx=str(q), samples=SAMPLES)
    engine = Pipeline()
    run = engine.run(cfg)
    assert run.result.precision.verdict == "over budget"
    return engine, cfg, run


def test_a_refused_copy_is_said_and_the_next_candidate_tried(over_budget):
    from drifttui.core.capture.shares import torch_tensors
    from drifttui.core.explain.causes.deliver.keep_list import search, unkept_why

    engine, cfg, run = over_budget
    seen = []

    def recheck(model):
        seen.append(len(seen))
        return engine.recheck(cfg, _refused(model) if len(seen) == 1 else model)

    pr = run.prepared
    keep = search(pr, run.result, recheck, torch_tensors(pr.model, pr.calls))
    assert len(seen) >= 2 and keep.checks == len(seen)          # the search went on after the refusal
    assert len(keep.refused) == 1 and "ONNX Runtime" in keep.refused[0], keep.refused
    assert keep.refused[0].split(": ")[0], keep.refused             # the layers of the refused copy
    assert keep.verified and keep.model is not None and keep.after.precision.verdict == "within budget"
    said = keep.refused_why()
    assert "refused 1 copy" in said and "next candidate" in said, said
    assert said in unkept_why(keep)


def test_every_copy_refused_is_no_crash_and_the_reason_is_said(over_budget):
    from drifttui.core.capture.shares import torch_tensors
    from drifttui.core.explain.causes.deliver.keep_list import search, unkept_why

    engine, cfg, run = over_budget
    pr = run.prepared
    keep = search(pr, run.result, lambda m: engine.recheck(cfg, _refused(m)), torch_tensors(pr.model, pr.calls))
    assert not keep.verified and keep.model is None and len(keep.refused) == keep.checks >= 2, keep.refused
    assert f"refused {keep.checks} copies" in unkept_why(keep), unkept_why(keep)
