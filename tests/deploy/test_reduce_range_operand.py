"""reduce_range's copy (the saturation fix verified on a copy, ``onnx/edit/keep/reduce_range.py``) of a
quantize_dynamic file whose MatMulInteger multiplies two constants: the first operand quantized once by the
quantizer with its own scale, and read by two products (DeBERTa's relative embeddings through ``pos_key_proj`` and
``pos_query_proj``).  The scales Mul then reads two initializers; the weight's is the second.  Taking the first
re-quantized each weight by the operand's scale and wrote a new scale over the operand's, once per product: the
second rewrite put the first product off by the ratio of the two weights' ranges, the copy was "still over
budget", and the verified fix was never offered (session 35)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.onnx.edit.keep.reduce_range import reduce_range
from drifttui.core.onnx.graph import build_index


def _float_file(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(16, 32)).astype(np.float32)          # a constant operand (a table), not a weight
    b1 = (rng.normal(size=(32, 24)) * 0.2).astype(np.float32)  # two weights of other ranges reading it
    b2 = (rng.normal(size=(32, 24)) * 0.7).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 24])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 24])
    nodes = [helper.make_node("MatMul", ["table", "key"], ["k"], name="/pos_key/MatMul"),
             helper.make_node("MatMul", ["table", "query"], ["q"], name="/pos_query/MatMul"),
             helper.make_node("Sub", ["k", "q"], ["d"], name="/sub"),
             helper.make_node("Add", ["d", "x"], ["y"], name="/add")]
    inits = [numpy_helper.from_array(a, "table"), numpy_helper.from_array(b1, "key"), numpy_helper.from_array(b2, "query")]
    g = helper.make_graph(nodes, "g", [x], [y], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return a, b1, b2


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_the_copy_requantizes_the_weight_and_keeps_the_constant_operand(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    a, b1, b2 = _float_file(tmp_path / "f.onnx")
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), weight_type=QuantType.QInt8)
    q = onnx.load(str(tmp_path / "q.onnx"))
    inits = {t.name: t for t in q.graph.initializer}
    mms = [n for n in q.graph.node if n.op_type == "MatMulInteger"]
    assert len(mms) == 2 and all(m.input[0] in inits and m.input[1] in inits for m in mms)   # the form under test
    copy, changed = reduce_range(q, build_index(q), None, {})
    assert sorted(changed) == sorted(m.name for m in mms)
    after = {t.name: numpy_helper.to_array(t) for t in copy.graph.initializer}
    before = {k: numpy_helper.to_array(t) for k, t in inits.items()}
    # the shared operand is untouched (values and scale); only the weights and their scales are 7-bit now
    operand = mms[0].input[0]
    assert np.array_equal(after[operand], before[operand])
    changed_scales = [k for k in before if k.endswith("scale") and not np.array_equal(after[k], before[k])]
    assert len(changed_scales) == 2
    assert all(int(np.abs(after[m.input[1]].astype(np.int32)).max()) <= 64 for m in mms)
    x = np.zeros((16, 24), np.float32)
    exact = a @ b1 - a @ b2
    # the 7-bit copy computes the file's products, to a 7-bit weight step of each
    step = (float(np.abs(b1).max()) + float(np.abs(b2).max())) / 64 * float(np.abs(a).sum(1).max())
    assert float(np.abs(_run(q, x) - exact).max()) <= step
    assert float(np.abs(_run(copy, x) - exact).max()) <= step
