"""float16 files from the real converters: accepted (ORT's converter leaves the nodes out of order),
their precision said, held to the float16 budget, a genuine drift still found."""
from __future__ import annotations

import onnx
import pytest

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export, export_local, fp16_occ, fp16_ort, local_spec, spec


def run(model: str, inputs: str, onnx_path, **kw):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=model, inputs=inputs, onnx=str(onnx_path), samples=kw.pop("samples", 3),
                           **kw)).result


@pytest.fixture(scope="module")
def small_fp16(tmp_path_factory):
    needs("onnxruntime.transformers.float16")
    d = tmp_path_factory.mktemp("fp16-small")
    out = {}
    for fn, inputs in (("small_cnn", "img32"), ("small_tf", "seq8")):
        raw = export_local(fn, inputs, "dynamo", d / fn)
        out[fn] = (raw, fp16_ort(raw, d / f"{fn}_fp16.onnx"))
    return out


def test_ort_float16_file_is_accepted_sorted_and_said(small_fp16):
    raw, fp16 = small_fp16["small_cnn"]
    m = onnx.load(str(fp16))
    with pytest.raises(Exception, match="topologically sorted"):      # what the converter leaves
        onnx.checker.check_model(m)
    r = run(local_spec("small_cnn"), local_spec("img32"), fp16)
    assert any("not in topological order" in n and "sorted its in-memory copy" in n for n in r.notes)
    assert [n.name for n in onnx.load(str(fp16)).graph.node] == [n.name for n in m.graph.node]   # file unchanged
    assert r.outputs and r.outputs[0].top1_agreement == 1.0
    mapped = [L for L in r.layers if L.local is not None]
    assert mapped, "the local (own-error) run works on a float16 file fed from float32 torch values"


@pytest.fixture(scope="module")
def occ_cnn(tmp_path_factory):
    needs("onnxconverter_common")
    d = tmp_path_factory.mktemp("fp16-occ")
    raw = export_local("small_cnn", "img32", "torchscript", d / "raw")
    return fp16_occ(raw, d / "small_cnn_occ.onnx")


@pytest.mark.parametrize("which", ["ort-cnn", "ort-tf", "occ-cnn"])
def test_clean_float16_file_is_detected_and_within_budget(small_fp16, occ_cnn, which):
    fn, inputs = ("small_tf", "seq8") if which.endswith("tf") else ("small_cnn", "img32")
    path = occ_cnn if which.startswith("occ") else small_fp16[fn][1]
    r = run(local_spec(fn), local_spec(inputs), path)
    p = r.precision
    assert p is not None and p.format == "float16" and "float16" in p.schemes
    assert p.evidence.get("Cast to float16", 0) >= 1 and p.evidence.get("float16 initializers", 0) >= 1
    assert p.verdict == "within budget" and r.verdict == "ok", [(L.module, L.status, L.budget) for L in r.layers]
    fp16_layers = [L for L in r.layers if L.budget is not None and L.budget.format == "float16"]
    computing = [L for L in fp16_layers if set(L.op_types) & {"Conv", "Gemm", "MatMul", "LayerNormalization"}]
    # the worst-case bound is at least 4 eps; the budget is 3x the layer recomputed in float16 by PyTorch
    # where it was (below the bound: tighter), else the bound
    assert computing and all(L.budget.own_bound >= 4 * 2 ** -10 for L in computing)
    measured = [L for L in computing if L.budget.derived == "measured"]
    assert measured and all(L.budget.own_budget == min(L.budget.own_bound, 3 * L.budget.measured) for L in measured)
    assert any(L.budget.own_budget < L.budget.own_bound / 2 for L in measured)
    # own loss of a float16 layer: ~60-75 dB (one rounding is ~70 dB)
    assert all(40 < L.budget.own_loss_db < 120 for L in fp16_layers if L.budget.own_loss_db not in (None, float("inf")))


def test_wrong_epsilon_in_a_float16_file_is_the_origin(small_fp16, tmp_path):
    _, fp16 = small_fp16["small_tf"]
    m = onnx.load(str(fp16))
    norms = [n for n in m.graph.node if n.op_type == "LayerNormalization"]
    assert len(norms) == 4
    target = norms[2]                   # layers.1.norm1 in execution order
    for a in target.attribute:
        if a.name == "epsilon":
            a.f = 0.5
    bad = tmp_path / "eps.onnx"
    onnx.save(m, str(bad))
    r = run(local_spec("small_tf"), local_spec("seq8"), bad)
    assert r.verdict == "drift" and r.precision.verdict == "over budget"
    assert r.drift_origin is not None and r.drift_origin.module == "layers.1.norm1"
    assert [L.module for L in r.layers if L.budget is not None and L.budget.over] == ["layers.1.norm1"]
    # a wrong epsilon is not a precision loss: no "precision" finding claims it (keeping it in float32
    # would not remove it)
    from drifttui.core.pipeline import Pipeline

    engine = Pipeline()
    found = engine.explain(engine.run(r.config).result).result.findings
    assert not any(f.check == "precision" for f in found), [(f.check, f.message) for f in found]
