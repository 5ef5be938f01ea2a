"""The left shift past its type's width (``propose/edits/shift_count.py``, ``onnx/edit/lowerings/shift_count.py``) on
a bare graph in the TorchScript exporter's form of ``a << b``: ``a * Cast(Pow(2.0, Cast(b, float)), int64)``.  A
count of 64 or more makes the power past int64's range, its Cast INT64_MIN, where torch's shift is 0 (the fuzzer's
source-derived pool, seed 34101: ``aten.__lshift__.Tensor((x * 100).long(), (y * 100).long())``, unverified before:
"no patch among 6 tried").  With the factor 0 there the file computes torch's shift, every count."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.shift_count import shift_count_patches
from drifttui.core.onnx.edit.patches import apply


def _file() -> onnx.ModelProto:
    mk = helper.make_node
    nodes = [mk("Cast", ["b"], ["bf"], name="/body/Cast_2", to=TensorProto.FLOAT),
             mk("Pow", ["two", "bf"], ["p"], name="/body/Pow"),
             mk("Cast", ["p"], ["f"], name="/body/Cast_3", to=TensorProto.INT64),
             mk("Mul", ["a", "f"], ["y"], name="/body/Mul_4")]
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "g", [vi("a", TensorProto.INT64, [12]), vi("b", TensorProto.INT64, [12])],
                              [vi("y", TensorProto.INT64, None)],
                              initializer=[numpy_helper.from_array(np.asarray(2.0, np.float32), "two")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _case(b: np.ndarray) -> tuple[Case, np.ndarray]:
    a = np.array([3, -3, 5, 7, 1, 3, -9, 11, 2, -1, 6, 13], np.int64)
    want = (torch.from_numpy(a) << torch.from_numpy(b)).numpy()
    model = _file()
    return Case(model, {"a": a, "b": b}, {"y": want}, "body", 0, 0, 0.0, 0.0,
                nodes=[n.name for n in model.graph.node], opset=17), want


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_the_factor_is_zero_where_the_count_reaches_the_width():
    case, want = _case(np.array([1, -1, 63, 64, 70, -100, 0, 200, 62, 65, 5, 128], np.int64))
    assert not np.array_equal(_run(case.model, case.feeds), want)      # 2 ** 64 cast to int64: INT64_MIN
    patches = shift_count_patches(case)
    assert len(patches) == 1 and (patches[0].check, patches[0].spec["bits"]) == ("lowering", 64)
    assert "__lshift__" in patches[0].why
    fixed = apply(case.model, patches[0])
    onnx.shape_inference.infer_shapes(fixed, strict_mode=True)
    assert np.array_equal(_run(fixed, case.feeds), want)


def test_no_patch_where_every_count_is_below_the_width():
    case, want = _case(np.array([1, -1, 63, 0, 5, 2, 8, 30, 62, 7, 5, 12], np.int64))
    assert np.array_equal(_run(case.model, case.feeds), want)
    assert shift_count_patches(case) == []
