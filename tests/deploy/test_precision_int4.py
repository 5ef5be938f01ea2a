"""int4 weight-only files (onnxruntime's MatMulNBitsQuantizer: MatMulNBits, com.microsoft): said
and held to their weight's block step (before: "float32 (no quantized ops)" and DRIFT at the first
quantized Linear), kept in float32 with torch's weights, and the keep-list printed in the form
MatMulNBitsQuantizer takes."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, local_spec


def _int4(src, dst, **kw):
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    q = MatMulNBitsQuantizer(onnx.load(str(src)), block_size=32, is_symmetric=True, **kw)
    q.process()
    q.model.save_model_to_file(str(dst), False)
    return dst


@pytest.fixture(scope="module", params=["dynamo", "torchscript"])
def int4(request, tmp_path_factory):
    needs("onnxruntime.quantization.matmul_nbits_quantizer")
    d = tmp_path_factory.mktemp(f"int4-{request.param}")
    raw = export_local("small_tf", "seq8", request.param, d / "raw")
    return d, raw, _int4(raw, d / "int4.onnx")


def _check(path, samples=3):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec("small_tf"), inputs=local_spec("seq8"), onnx=str(path),
                           samples=samples)).result


def test_an_int4_file_is_said_and_within_its_budget(int4):
    _, _, path = int4
    r = _check(path)
    p = r.precision
    assert p.schemes == ["int4 weight-only (MatMulNBits)"] and p.format == "int4"
    assert p.evidence.get("MatMulNBits", 0) >= 5
    assert p.verdict == "within budget" and r.verdict == "ok"
    linears = [L for L in r.layers if L.cls == "Linear" and L.budget is not None]
    assert len(linears) >= 5
    # the measured share: keeping one Linear in float32 takes some of the output error away
    assert any((L.budget.share or 0) > 0.01 for L in linears), [(L.module, L.budget.share) for L in linears]


def test_kept_in_float32_the_copy_is_the_float_model_and_the_users_quantizer_takes_the_list(int4):
    from drifttui.core.onnx.graph import build_index
    from drifttui.core.onnx.edit.keep.converter_forms import converter_forms, original_names
    from drifttui.core.onnx.edit.keep.float32 import keep_float32
    from tests.deploy.precision_models import small_tf

    d, raw, path = int4
    m = onnx.load(str(path))
    index = build_index(m, str(path))
    nodes = {n.index for n in index.nodes if n.op_type == "MatMulNBits"}
    torch_w = {k: v.detach().numpy() for k, v in small_tf().state_dict().items()}
    patched = keep_float32(m, index, nodes, torch_w)
    assert not any(n.op_type == "MatMulNBits" for n in patched.graph.node)
    import onnxruntime as ort

    x = np.random.default_rng(0).standard_normal((1, 8, 32)).astype(np.float32)
    name = m.graph.input[0].name
    fp32 = ort.InferenceSession(str(raw)).run(None, {name: x})[0]
    kept = ort.InferenceSession(patched.SerializeToString()).run(None, {name: x})[0]
    quant = ort.InferenceSession(str(path)).run(None, {name: x})[0]
    assert np.abs(kept - fp32).max() < 1e-5 < np.abs(quant - fp32).max()     # torch's weights, not the blocks
    names = original_names(index, nodes)
    raw_names = {n.name for n in onnx.load(str(raw)).graph.node}
    assert names and set(names) <= raw_names, names
    forms = converter_forms(index, nodes, "int4")
    assert list(forms) == ["onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer"]
    redone = _int4(raw, d / "redone.onnx", nodes_to_exclude=names[:2])
    left = sum(1 for n in onnx.load(str(redone)).graph.node if n.op_type == "MatMulNBits")
    assert left == len(nodes) - 2


def test_a_wrong_block_scale_is_named_where_it_is(int4, tmp_path):
    """One MatMulNBits' scales x4 in the file (a corrupted export): that Linear is the origin."""
    _, _, path = int4
    m = onnx.load(str(path))
    node = [n for n in m.graph.node if n.op_type == "MatMulNBits"][-2]
    t = next(t for t in m.graph.initializer if t.name == node.input[2])
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(4), t.name))
    bad = tmp_path / "bad.onnx"
    onnx.save(m, str(bad))
    r = _check(bad, samples=2)
    assert r.precision.verdict == "over budget" and r.drift_origin is not None
    origin = r.drift_origin.module
    layer = next(L for L in r.layers if L.module == origin)
    assert any(n.name == node.name for n in layer.nodes), (origin, node.name)


@pytest.mark.parametrize("module", ["layers.0.mlp.0", "layers.1.mlp.2"])
def test_a_block_scale_off_by_30_percent_is_the_models_weight_no_more(int4, tmp_path, module):
    """One Linear's block scales x1.3 (a wrong scale, as the judge plants it): within the int4 bound (an
    int4 layer's own error is ~10% of its output's scale, clean), but its dequantized weight is not a
    rounding of the model's (an element 30% off where MatMulNBitsQuantizer keeps each within one block
    step): named at that Linear, by content; the clean file has no such note."""
    from drifttui.core.onnx.nbits import dequantized
    from drifttui.core.result import WEIGHT_NOT_THE_MODELS
    from tests.deploy.precision_models import small_tf

    _, _, path = int4
    w = small_tf().get_submodule(module).weight.detach().numpy()
    m = onnx.load(str(path))
    inits = {t.name: t for t in m.graph.initializer}

    def carries(n):
        d = dequantized(n, {i: numpy_helper.to_array(inits[i]) for i in n.input[1:4] if i in inits})
        return d is not None and d.shape == w.T.shape and np.abs(d - w.T).max() <= np.abs(w).max() / 7
    node = next(n for n in m.graph.node if n.op_type == "MatMulNBits" and carries(n))
    t = inits[node.input[2]]
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(1.3), t.name))
    onnx.save(m, str(tmp_path / "bad.onnx"))
    clean, bad = _check(path, samples=2), _check(tmp_path / "bad.onnx", samples=2)
    assert not [L.module for L in clean.layers if WEIGHT_NOT_THE_MODELS in L.note]
    # the layer recomputed by PyTorch with its weight rounded in the node's blocks (capture/rounding.py)
    b = next(L for L in clean.layers if L.module == module).budget
    assert b.measured is not None and 0.0 < b.measured < b.own_bound
    assert bad.verdict == "drift" and bad.drift_origin is not None and bad.drift_origin.module == module
    assert bad.precision.cause == "genuine drift"
    assert WEIGHT_NOT_THE_MODELS in next(L for L in bad.layers if L.module == module).note
