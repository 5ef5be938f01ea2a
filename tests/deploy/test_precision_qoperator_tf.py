"""A transformer quantized in the QOperator format (quantize_static, QuantFormat.QOperator): its
QLinearAdd / QLinearMul / QLinearSoftmax / QGemm are com.microsoft ops, which onnx's shape
inference leaves untyped.  Their integer outputs are still read through DequantizeLinear views, so
a Linear's output is its bias add (not the MatMul before it: its own error was the bias, 9 dB) and
a GELU's is its last Mul (not the Erf inside it: 3 dB), and a clean file is within its budget at
the output error its QDQ twin has."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, feeds_of, int8_qdq, int8_qoperator, local_spec

SAMPLES = 4


def check(path, samples=SAMPLES, fn="small_tf", inputs="seq8"):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec(fn), inputs=local_spec(inputs), onnx=str(path), samples=samples)).result


def quantized(fn, inputs, exporter, folder, qdq=False):
    """(the raw export's QOperator file, and its QDQ twin when asked), calibrated on the checked samples."""
    needs("onnxruntime.quantization")
    raw = export_local(fn, inputs, exporter, folder / "raw")
    feeds = feeds_of(inputs, onnx.load(str(raw)).graph.input[0].name)
    qop = int8_qoperator(raw, folder / "qop.onnx", feeds, n=SAMPLES)
    return (qop, int8_qdq(raw, folder / "qdq.onnx", feeds, n=SAMPLES)) if qdq else qop


@pytest.fixture(scope="module", params=["torchscript", "dynamo"])
def files(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"qoptf-{request.param}")
    return (d, *quantized("small_tf", "seq8", request.param, d, qdq=True), request.param)


def _out_rel(result) -> float:
    return max(o.metrics.max_rel.worst for o in result.outputs)


def test_a_clean_qoperator_transformer_is_within_budget_layer_by_layer(files):
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from drifttui.core.runtime.cpu import detect

    _, qop, qdq, exporter = files
    engine = Pipeline()
    r = check(qop)
    twin = engine.run(Config(model=local_spec("small_tf"), inputs=local_spec("seq8"), onnx=str(qdq),
                             samples=SAMPLES)).result
    assert "int8 QOperator" in r.precision.schemes
    assert {"QLinearAdd", "QLinearMatMul"} <= set(r.precision.evidence)
    if detect().saturates is False or twin.verdict == "ok":
        # exact products: the same output error as its QDQ twin (within a factor 2), the same verdict
        assert 0.5 < _out_rel(r) / _out_rel(twin) < 2.0
        assert twin.precision.verdict == "within budget"
    else:
        # x86 without VNNI: ORT runs the QDQ twin's activations as uint8 (QDQS8ToU8) and its fused u8s8
        # products saturate (the QOperator file's S8S8 kernels do not): over budget, and drifttui says why
        assert twin.precision.verdict == "over budget" and _out_rel(twin) > 2 * _out_rel(r)
        head = engine.explain(twin).result.findings[0]
        assert head.kind == "saturation" and head.verified is True, (head.kind, head.message)
        assert all(row["op"].startswith("QDQ ") for row in head.evidence["saturating nodes"])
    assert r.precision.verdict == "within budget", [(L.module, L.status, L.local) for L in r.layers if L.status != "ok"]
    assert r.drift_origin is None
    by = {L.module: L for L in r.layers}
    for m in ("layers.0.mlp.2", "layers.1.mlp.2", "head"):
        L = by[m]
        assert L.status == "ok" and L.local is not None and L.budget is not None, m
        # its output is the bias add's (a QLinearAdd or QGemm), read through a view
        assert any(n.op_type in ("QLinearAdd", "QGemm") for n in L.nodes), (m, [n.op_type for n in L.nodes])
        assert L.budget.own_loss_db > 25, (m, L.budget.own_loss_db)
    # a GELU's value is its own output, not the Erf inside it (own error 0.52 of its scale before)
    gelu = [L for L in r.layers if L.cls == "GELU"]
    assert len(gelu) == 2 and all(L.status == "ok" and not any("Erf" in v for v in L.onnx_values) for L in gelu), \
        [(L.module, L.status, L.onnx_values) for L in gelu]
    if exporter == "torchscript":        # dynamo writes one Gelu op, which the quantizer leaves in float
        assert {"QLinearAdd", "QLinearMul"} <= {op for L in gelu for op in L.op_types}


def test_a_wrong_bias_in_a_qoperator_transformer_is_named_where_it_is(files):
    """A bias that the quantized file holds wrong (the quantized bias of layers.1.mlp.2 with half its
    values at the other end of their range): the origin is that Linear, whose output includes the bias add."""
    d, qop, _, _ = files
    m = onnx.load(str(qop))
    t = next((t for t in m.graph.initializer if t.name.startswith("layers.1.mlp.2.bias") and t.data_type in (2, 3, 6)
              and len(t.dims) == 1),
             None)
    assert t is not None, [t.name for t in m.graph.initializer if "mlp.2" in t.name]
    a = numpy_helper.to_array(t).copy()
    if a.dtype == np.int32:           # a QGemm's bias, at x_scale * w_scale: shift it by a lot
        a[: a.size // 2] += np.int32(max(1, int(np.abs(a).max())))
    else:                              # a QLinearAdd's uint8/int8 bias: half of it at the far end of its range
        info = np.iinfo(a.dtype)
        half = a[: a.size // 2]
        a[: a.size // 2] = np.where(half.astype(np.int32) < (int(info.min) + int(info.max)) // 2, info.max, info.min)
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(a), t.name))
    bad = d / "bad_bias.onnx"
    onnx.save(m, str(bad))
    r = check(bad, samples=2)
    assert r.precision.verdict == "over budget"
    assert r.drift_origin is not None and r.drift_origin.module == "layers.1.mlp.2", r.drift_origin


def test_ops_the_patch_cannot_keep_are_named_not_measured_as_zero():
    """A QOperator op with no float form in the keep-in-float32 patch (a channels-last pool,
    QAttention...) is left quantized by it: such a layer's share is not measured (a share of ~0
    would call its loss "a genuine drift"), and the op is named."""
    from onnx import TensorProto, helper

    from drifttui.core.onnx.graph import build_index
    from drifttui.core.onnx.edit.keep.float32 import unkept_ops

    f = lambda n, v: helper.make_tensor(n, TensorProto.FLOAT, [], [v])                       # noqa: E731
    u = lambda n: helper.make_tensor(n, TensorProto.UINT8, [], [128])                         # noqa: E731
    nodes = [helper.make_node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "z"], ["p"], domain="com.microsoft",
                              channels_last=1, name="pool"),
             helper.make_node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "z"], ["q"], domain="com.microsoft",
                              channels_last=0, name="pool_nchw")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 4, 3])],
                          [helper.make_tensor_value_info("p", TensorProto.UINT8, None),
                           helper.make_tensor_value_info("q", TensorProto.UINT8, None)],
                          initializer=[f("s", 0.1), u("z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    index = build_index(m, None)
    assert unkept_ops(index, {0}) == ["QLinearGlobalAveragePool"]
    assert unkept_ops(index, {1}) == []


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_relu_folded_into_a_quantized_output_leaves_the_layer_before_it_fused(tmp_path, exporter):
    """QOperator folds the encoder's ReLU into linear1's output (zero point 0): that value is
    relu(linear1), so linear1's own output is not in the file. It is fused, not compared with the
    clipped value or with the MatMul before its bias (before: OVER BUDGET at enc.linear1, 7 dB, on
    a clean file whose output error equals its QDQ twin's, and diagnose "verified" a re-export)."""
    r = check(quantized("encoder_relu", "seq8x16", exporter, tmp_path), fn="encoder_relu", inputs="seq8x16")
    assert r.precision.verdict == "within budget" and r.drift_origin is None, r.drift_origin
    by = {L.module: L for L in r.layers}
    assert by["enc.linear1"].status == "fused"
    assert by["enc.linear2"].status == "ok" and by["enc.linear2"].local is not None
    assert any("ReLU folded into a quantizer" in n for n in r.notes)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_quantized_value_moved_on_by_a_reshape_is_read_at_its_own_scale(tmp_path, exporter):
    """GPT-2's MLP (precision_models.gpt_mlp): the GELU's last QLinearMul reaches the next QGemm through
    the Conv1D's Reshape, a reader that names no scale.  The value is still read through a view (at the
    scale of the reader after the Reshape), so the GELU's output is its own (before: its first Mul,
    0.5 x, paired for want of it: "drift" at 0.act, 14 dB, and c_proj fused), and each Conv1D's
    recomputation in the file's precision rounds its output at its QGemm's output scale."""
    r = check(quantized("gpt_mlp", "seq8", exporter, tmp_path), fn="gpt_mlp", inputs="seq8")
    assert r.verdict == "ok" and r.precision.verdict == "within budget", (r.drift_origin, r.precision.verdict)
    by = {L.module: L for L in r.layers}
    for b in ("0", "1"):
        act, proj = by[f"{b}.act"], by[f"{b}.c_proj"]
        assert act.status == "ok" and "Tanh" in act.op_types, (act.onnx_values, act.op_types)
        assert proj.status == "ok" and "QGemm" in proj.op_types, (proj.status, proj.onnx_values)
    assert r.coverage.mapped == r.coverage.modules
