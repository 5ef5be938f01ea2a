"""QOperator files (quantize_static with QuantFormat.QOperator: QLinearConv, QGemm...): mapped per
layer through DequantizeLinear views of their integer activations, and `drifttui repair` keeps
QLinear* nodes in float32 (DequantizeLinear in, the float op with torch's weights, QuantizeLinear
back; the float value flowing between two kept nodes).  The printed nodes_to_exclude, given to the
user's own quantize_static(QOperator) with the same calibration, gives a file within budget."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, feeds_of, int8_qoperator, local_spec

SAMPLES = 4


def check(fn, path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec(fn), inputs=local_spec("img32"), onnx=str(path), samples=SAMPLES)).result


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    needs("onnxruntime.quantization")
    d = tmp_path_factory.mktemp("qop")
    raw = export_local("heavy_cnn", "img32", "torchscript", d / "raw")
    feeds = feeds_of("img32", onnx.load(str(raw)).graph.input[0].name)
    return d, raw, feeds, int8_qoperator(raw, d / "qop.onnx", feeds, n=SAMPLES)


def test_qoperator_file_is_mapped_per_layer_not_fused(heavy):
    """Its integer activations are read through DequantizeLinear: each conv's layer has its own
    error and budget (before: every QLinearConv's call was `fused`, one budget for the whole file)."""
    _, _, _, qop = heavy
    r = check("heavy_cnn", qop)
    assert "int8 QOperator" in r.precision.schemes and "int8 QDQ" not in r.precision.schemes
    assert {"QLinearConv", "QGemm"} <= set(r.precision.evidence)
    assert r.precision.nodes == len(onnx.load(str(qop)).graph.node)       # drifttui's views are not counted
    budgeted = {L.module for L in r.layers if L.budget is not None and L.local is not None}
    assert {"stem.1", "b1.1", "b2.1", "fc"} <= budgeted, budgeted
    # the outlier channel of stem's output rounds every other channel to a few levels: b1 pays
    assert r.precision.verdict == "over budget" and r.drift_origin.module.startswith("b1")


def test_repair_keeps_qlinear_nodes_and_the_users_quantizer_agrees(heavy, capsys):
    from drifttui.cli import main

    d, raw, feeds, qop = heavy
    fixed = d / "kept.onnx"
    code = main(["repair", local_spec("heavy_cnn"), "--onnx", str(qop), "--inputs", local_spec("img32"),
                 "--samples", str(SAMPLES), "--out", str(fixed)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verified" in out and "check on the patched copy: within budget" in out
    line = next(ln for ln in out.splitlines() if "nodes_to_exclude=" in ln)
    names = eval(line.split("nodes_to_exclude=", 1)[1])      # the list drifttui printed  # noqa: S307
    # both convs around the heavy-tailed value: keeping b1 alone still reads stem's rounded output
    assert sorted(names) == ["/b1/b1.0/Conv", "/stem/stem.0/Conv"], names
    patched = onnx.load(str(fixed))
    assert not any(n.op_type == "QLinearConv" and n.name.startswith(("/stem/", "/b1/")) for n in patched.graph.node)
    assert any(n.op_type == "QLinearConv" and n.name.startswith("/b2/") for n in patched.graph.node)
    assert not any(n.name.startswith("drifttui_") for n in patched.graph.node)     # its views are not written
    assert check("heavy_cnn", fixed).precision.verdict == "within budget"
    redo = int8_qoperator(raw, d / "redo.onnx", feeds, n=SAMPLES, nodes_to_exclude=names)
    after = check("heavy_cnn", redo)
    assert after.precision.verdict == "within budget" and after.verdict == "ok"
    before = check("heavy_cnn", qop)
    assert out_max(after) < 0.5 * out_max(before)          # the outputs really are closer to PyTorch
    # ... and stem alone is not enough (b1 still reads the heavy-tailed value rounded)
    alone = int8_qoperator(raw, d / "alone.onnx", feeds, n=SAMPLES, nodes_to_exclude=["/stem/stem.0/Conv"])
    assert check("heavy_cnn", alone).precision.verdict == "over budget"
    # ... nor b1 alone: it reads stem's output through the file's own DequantizeLinear, rounded as before
    # (before: within budget, b1 fed the unrounded PyTorch value, at the same output error as `qop`)
    b1_only = check("heavy_cnn", int8_qoperator(raw, d / "b1_only.onnx", feeds, n=SAMPLES,
                                                nodes_to_exclude=["/b1/b1.0/Conv"]))
    assert b1_only.precision.verdict == "over budget" and b1_only.drift_origin.module.startswith("b1")
    assert out_max(b1_only) > 2 * out_max(after)


def out_max(result) -> float:
    return max(o.metrics.max_abs.worst for o in result.outputs)


@pytest.mark.deploy
def test_wrong_weight_in_a_qoperator_file_is_a_genuine_drift(heavy, capsys):
    """A negated half of b2's int8 weights: over budget at b2, but keeping it in float32 (with its
    producer) changes nothing: named a genuine drift, no keep-list."""
    from drifttui.cli import main

    d, _, _, qop = heavy
    m = onnx.load(str(qop))
    t = next(t for t in m.graph.initializer if t.name.startswith("b2.0.weight") and t.data_type in (2, 3)
             and len(t.dims) == 4)
    a = numpy_helper.to_array(t).copy()
    a[:16] = -a[:16]
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(a), t.name))
    bad = d / "bad.onnx"
    onnx.save(m, str(bad))
    main(["repair", local_spec("heavy_cnn"), "--onnx", str(bad), "--inputs", local_spec("img32"),
          "--samples", "2", "--out", str(d / "fixed_bad.onnx")])
    out = capsys.readouterr().out
    assert "a genuine drift, not the precision" in out and "b2" in out, out
    assert "nodes_to_exclude" not in out


@pytest.mark.deploy
def test_step_4_and_the_headline_cause_name_both_convs(heavy):
    """Step 4 (the precision bisect) finds the repair's list; the headline cause of the origin is the
    precision, with the nodes to exclude for the reader and the producer of its rounded input."""
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    _, _, _, qop = heavy
    engine = Pipeline()
    result = engine.run(Config(model=local_spec("heavy_cnn"), inputs=local_spec("img32"), onnx=str(qop),
                               samples=SAMPLES)).result
    head = engine.explain(result).result.findings[0]
    assert head.kind == "precision" and head.module == result.drift_origin.module
    assert "/b1/b1.0/Conv" in head.fix and "/stem/stem.0/Conv" in head.fix
    step = engine.step(4, result)
    assert step.verdict == "fail" and step.evidence["after"]["verdict"] == "within budget"
    assert sorted(step.evidence["nodes (your float model)"]) == ["/b1/b1.0/Conv", "/stem/stem.0/Conv"]


def test_the_written_copy_of_a_transformer_is_checked_again(tmp_path):
    """Every reduced node of small_tf's QOperator file kept in float32, written as `repair` writes it:
    drifttui's Reshape views of its Gemm'd values are undone in the file (before, they were left in
    it and a second check added views of the same names: ORT refused the graph, exit 3)."""
    needs("onnxruntime.quantization")
    from drifttui.core.capture.shares import torch_tensors
    from drifttui.core.pipeline import run_once
    from drifttui.core.onnx.edit.keep.float32 import keep_float32, without_views
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    raw = export_local("small_tf", "seq8", "torchscript", tmp_path / "raw")
    qop = int8_qoperator(raw, tmp_path / "qop.onnx", feeds_of("seq8", onnx.load(str(raw)).graph.input[0].name),
                         n=SAMPLES)
    cfg = Config(model=local_spec("small_tf"), inputs=local_spec("seq8"), onnx=str(qop), samples=SAMPLES)
    pr = prepare(cfg)
    kept = without_views(keep_float32(pr.proto, pr.index, set(pr.precision.nodes), torch_tensors(pr.model)))
    assert not any(n.name.startswith("drifttui_") for n in kept.graph.node)
    path = tmp_path / "kept.onnx"
    onnx.save(kept, str(path))
    before = run_once(cfg).result
    after = run_once(Config(model=cfg.model, inputs=cfg.inputs, onnx=str(path), samples=SAMPLES)).result
    assert out_max(after) < 0.5 * out_max(before)
