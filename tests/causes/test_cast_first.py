"""The cast-first edit (``onnx/edit/numerics/cast_first.py``) on a hand-made graph: ``Softmax(Neg(Cast(x, float16)))``
cast to float32 afterwards, as both exporters write ``F.softmin(x.half(), -1, dtype=torch.float32)``.  Moved
before the op, with the narrow chain up to the explicit ``x.half()``, the file computes what torch computes; the
op alone is not enough under ONNX Runtime (it drops the float16 rounding of the Neg it computes in float32)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from drifttui.core.onnx.edit.patches import Patch, apply


def _softmin_file() -> onnx.ModelProto:
    nodes = [helper.make_node("Cast", ["x"], ["h"], name="half", to=10),
             helper.make_node("Neg", ["h"], ["n"], name="neg"),
             helper.make_node("Softmax", ["n"], ["s"], name="softmax", axis=-1),
             helper.make_node("Cast", ["s"], ["y"], name="widen", to=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 32])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _patch(nodes: list, inputs: list) -> Patch:
    return Patch({"op": "rewrite", "rewrite": "cast_first", "node": "softmax", "nodes": nodes, "cast": "widen",
                  "to": 1, "narrow": 10, "inputs": inputs}, "dtype", "", "")


def test_the_widening_cast_moved_before_the_chain_computes_what_torch_computes():
    torch.manual_seed(0)
    x = (torch.randn(6, 32) * 3).numpy()
    want = torch.nn.functional.softmin(torch.from_numpy(x).half(), dim=-1, dtype=torch.float32).numpy()
    assert np.abs(_run(_softmin_file(), x) - want).max() > 3e-4           # the file as exported: float16 softmax
    fixed = apply(_softmin_file(), _patch(["softmax", "neg"], ["h"]))
    assert np.abs(_run(fixed, x) - want).max() < 1e-6
    assert [n.op_type for n in fixed.graph.node].count("Cast") == 3       # x.half() kept, one Cast to float added


def test_the_op_alone_widened_loses_the_rounding_onnx_runtime_drops():
    """Why the proposer also offers the chain: the Softmax alone in float32 reads the Neg ONNX Runtime computed in
    float32 from the unrounded x (it drops the rounding of ``x.half()`` between its inserted Casts)."""
    torch.manual_seed(0)
    x = (torch.randn(6, 32) * 3).numpy()
    want = torch.nn.functional.softmin(torch.from_numpy(x).half(), dim=-1, dtype=torch.float32).numpy()
    alone = apply(_softmin_file(), _patch(["softmax"], ["n"]))
    assert np.abs(_run(alone, x) - want).max() > 1e-4


def test_a_value_read_outside_the_set_keeps_its_type():
    model = _softmin_file()
    model.graph.output.append(helper.make_tensor_value_info("s", TensorProto.FLOAT16, [6, 32]))
    fixed = apply(model, _patch(["softmax"], ["n"]))
    onnx.checker.check_model(fixed, full_check=True)
    x = np.random.default_rng(0).standard_normal((6, 32)).astype(np.float32)
    sess = ort.InferenceSession(fixed.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(["s"], {"x": x})[0].dtype == np.float16
