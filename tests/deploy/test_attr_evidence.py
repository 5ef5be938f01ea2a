"""Attribute evidence and the restoring repair (issue 33, points 8 and 6), on the suite's small models
through the real quantizers (fast: `make test`; the real architectures are test_drift_matrix.py's).

A Conv's padding shifted by one row, or a LayerNorm's epsilon changed, AFTER quantization: on a CPU
whose u8s8 kernels saturate (no VNNI) every quantized layer is over its budget and the own error of
the drifted layer looks like its neighbours', so the numbers alone can name the first saturating layer.
The node's attribute against what its torch module declares names it on every CPU, as the same drift
in the float32 export is named.  ``repair`` puts back what the model says (a weight requantized on the
file's own grid, an attribute set back) and checks the copy."""
from __future__ import annotations

import onnx
import pytest

from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS, WEIGHT_NOT_THE_MODELS
from tests.deploy import arch_drifts as D
from tests.deploy import attr_plant as A
from tests.deploy import qkv_models as Q
from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, int8_dynamic, int8_qdq, local_spec, feeds_of, fp16_ort

SAMPLES = 2


def check(fn, inputs, path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec(fn), inputs=local_spec(inputs), onnx=str(path), samples=SAMPLES)).result


def _attr_notes(result):
    return [L.module for L in result.layers if ATTRIBUTE_NOT_THE_MODELS in L.note]


@pytest.mark.parametrize("convert", ["dynamic", pytest.param("qdq", marks=pytest.mark.deploy)])
def test_shifted_padding_in_a_quantized_cnn_is_named_at_its_conv(tmp_path, convert):
    needs("onnxruntime.quantization")
    from tests.deploy.precision_models import small_cnn

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    if convert == "dynamic":      # default settings: saturating u8s8 products on a CPU without VNNI
        dep = int8_dynamic(raw, tmp_path / "int8.onnx")
    else:
        dep = int8_qdq(raw, tmp_path / "int8.onnx", feeds_of("img32", onnx.load(str(raw)).graph.input[0].name), n=4)
    clean = check("small_cnn", "img32", dep)
    assert not _attr_notes(clean), clean.drift_origin
    w = small_cnn().b2[0].weight.detach().numpy()
    truth = check("small_cnn", "img32", A.pads(raw, w, tmp_path / "raw-pads.onnx"))
    bad = check("small_cnn", "img32", A.pads(dep, w, tmp_path / "pads.onnx"))
    assert truth.drift_origin.module == bad.drift_origin.module == "b2.0", (truth.drift_origin, bad.drift_origin)
    assert bad.precision.cause == "genuine drift"
    layer = next(L for L in bad.layers if L.module == "b2.0")
    assert "pads [2, 1, 0, 1]" in layer.note and "b2.0.padding = (1, 1)" in layer.note


@pytest.mark.deploy
def test_epsilon_of_a_layernorm_in_a_quantized_transformer_is_named(tmp_path):
    needs("onnxruntime.quantization")
    raw = export_local("small_tf", "seq8", "dynamo", tmp_path / "raw")
    dep = int8_dynamic(raw, tmp_path / "int8.onnx")
    assert not _attr_notes(check("small_tf", "seq8", dep))
    truth = check("small_tf", "seq8", D.epsilon(raw, 3, 0.1, tmp_path / "raw-eps.onnx"))     # norms in graph order:
    bad = check("small_tf", "seq8", D.epsilon(dep, 3, 0.1, tmp_path / "eps.onnx"))          # the 4th is layers.1.norm2
    assert truth.drift_origin.module == bad.drift_origin.module == "layers.1.norm2", bad.drift_origin
    assert "layers.1.norm2" in _attr_notes(bad)


def test_a_pad_folded_into_a_conv_is_not_an_attribute_drift(tmp_path):
    """A module that pads with F.pad and convolves with padding 0 (timm's Conv2dSame does): onnxsim
    folds the Pad into the Conv's pads, which then differ from the module's padding by their total: a
    fold, not a drift."""
    needs("onnxsim")
    from tests.deploy import processed as P
    from tests.deploy import unbuilt_models as U

    src = U.export("padded_cnn", "torchscript", tmp_path)
    dep = P.onnxsim(src, tmp_path / "sim.onnx")
    pads = [list(a.ints) for n in onnx.load(str(dep)).graph.node if n.op_type == "Conv" for a in n.attribute
            if a.name == "pads"]
    assert [0, 1, 1, 0] in pads or [1, 0, 0, 1] in pads or any(sum(p) for p in pads), pads   # the Pad went in
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    result = run_once(Config(model=U.spec("padded_cnn"), onnx=str(dep), inputs="shape:1x3x16x16", samples=2)).result
    assert result.verdict == "ok" and not _attr_notes(result), (result.drift_origin, _attr_notes(result))


@pytest.mark.parametrize("drift", ["scale", "pads", pytest.param("int8", marks=pytest.mark.deploy),
                                   pytest.param("float16", marks=pytest.mark.deploy)])
def test_repair_restores_what_the_model_says(tmp_path, capsys, drift):
    """A weight that is not the model's (its int8 scale x1.3, its integers moved, its float16 values
    x1.05) or a shifted padding, in a quantize_dynamic file without reduce_range (no test case of the
    origin where the CPU saturates: "cannot repair" before): repair puts the model's value back on the
    file's own grid, checks the copy, and the copy is checked clean of it by a fresh run."""
    needs("onnxruntime.quantization")
    from drifttui.cli import main
    from tests.deploy.precision_models import small_cnn

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    w = small_cnn().b2[0].weight.detach().numpy()
    if drift == "float16":
        bad = Q.plant_weight(fp16_ort(raw, tmp_path / "conv.onnx"), tmp_path / "bad.onnx", w, "float16", 1.05)
    elif drift == "pads":
        bad = A.pads(int8_dynamic(raw, tmp_path / "conv.onnx"), w, tmp_path / "bad.onnx")
    else:
        bad = Q.plant_weight(int8_dynamic(raw, tmp_path / "conv.onnx"), tmp_path / "bad.onnx", w, drift, 1.3)
    before = check("small_cnn", "img32", bad)
    assert before.drift_origin.module == "b2.0" and before.precision.cause == "genuine drift"
    out = tmp_path / "fixed.onnx"
    code = main(["repair", local_spec("small_cnn"), "--onnx", str(bad), "--inputs", local_spec("img32"),
                 "--samples", str(SAMPLES), "--out", str(out)])
    said = capsys.readouterr().out
    assert out.exists(), said
    assert "restored from b2.0.weight" in said or "set back to [1, 1, 1, 1]" in said, said
    after = check("small_cnn", "img32", out)
    assert not [L for L in after.layers if WEIGHT_NOT_THE_MODELS in L.note or ATTRIBUTE_NOT_THE_MODELS in L.note]
    assert after.drift_origin is None or after.precision.cause == "precision", after.drift_origin
    assert code == (0 if after.verdict == "ok" else 1)
    kinds = {t.data_type for t in onnx.load(str(out)).graph.initializer} == \
        {t.data_type for t in onnx.load(str(bad)).graph.initializer}
    assert kinds      # the file keeps its precision: no layer put back in float32
