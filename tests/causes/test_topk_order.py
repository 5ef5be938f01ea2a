"""The unsorted TopK (``propose/edits/topk_order.py``) on a bare graph: ``torch.topk(x, k, sorted=False)`` is
written ``TopK(sorted=0)``, whose order ONNX Runtime's selection chooses otherwise than torch's CPU kernel (the
fuzzer's source-derived pool, seed 34031: ``aten.topk.default(x.view(B, 2, 16), 2, 1, True, False)``, both
exporters, unverified before: "no patch among 8 tried").  As ``sorted=1`` the file computes torch's values."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.topk_order import unsorted_topk_patches
from drifttui.core.onnx.edit.patches import apply


def _file(sorted_: int) -> onnx.ModelProto:
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1, largest=1, sorted=sorted_)
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([node], "g", [vi("x", TensorProto.FLOAT, [6, 2, 16])],
                              [vi("v", TensorProto.FLOAT, None), vi("i", TensorProto.INT64, None)],
                              initializer=[numpy_helper.from_array(np.asarray([2], np.int64), "k")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})


def _case(model: onnx.ModelProto) -> tuple[Case, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    x = torch.randn(6, 2, 16) * 1e4
    v, i = torch.topk(x, 2, 1, True, False)
    case = Case(model, {"x": x.numpy()}, {"v": v.numpy(), "i": i.numpy()}, "body", 0, 0, 0.0, 0.0, nodes=["topk"],
                opset=17)
    return case, v.numpy(), i.numpy()


def test_sorted_topk_computes_torchs_unsorted_order():
    model = _file(0)
    case, v, i = _case(model)
    got = _run(model, case.feeds["x"])
    assert not np.array_equal(got[0], v)            # ONNX Runtime's own order
    patches = unsorted_topk_patches(case)
    assert len(patches) == 1 and (patches[0].check, patches[0].kind) == ("op-compat", "runtime")
    assert "topk(sorted=False)" in patches[0].why
    fixed = _run(apply(model, patches[0]), case.feeds["x"])
    assert np.array_equal(fixed[0], v) and np.array_equal(fixed[1], i)


def test_no_patch_for_a_sorted_topk():
    case, _, _ = _case(_file(1))
    assert unsorted_topk_patches(case) == []
