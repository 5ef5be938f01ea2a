"""The wrapping integer product (``propose/edits/int_prod.py``, ``onnx/edit/lowerings/int_prod.py``) on bare graphs:
ONNX Runtime's ``ReduceProd`` saturates an overflowing int64 product where torch's ``prod`` wraps (the fuzzer's
source-derived pool, seed 23063: ``aten.prod.default((x * 100).long())``, both exporters, unverified: no patch).
Written as a tree of ``Mul`` (which wraps in ONNX Runtime) it computes torch's value exactly."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.int_prod import int_prod_patches
from drifttui.core.onnx.edit.patches import apply


def _file(axes, keepdims: int, opset: int, shape=(6, 33)) -> onnx.ModelProto:
    inits, extra, attrs = [], [], {"keepdims": keepdims}
    if axes is not None and opset >= 18:
        inits, extra = [numpy_helper.from_array(np.asarray(axes, np.int64), "axes")], ["axes"]
    elif axes is not None:
        attrs["axes"] = axes
    node = helper.make_node("ReduceProd", ["x", *extra], ["y"], name="prod", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT64, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize("axes,keepdims,opset", [(None, 0, 17), ([1], 0, 18), ([-1], 1, 13), ([0, 1], 1, 18),
                                                  ([0], 0, 17)])
def test_the_product_as_a_tree_of_mul_wraps_as_torchs(axes, keepdims, opset):
    torch.manual_seed(0)
    x = (torch.randn(6, 33) * 3000).long()
    dims = tuple(range(2)) if axes is None else tuple(axes)
    want = x.clone()
    for d in sorted((d % 2 for d in dims), reverse=True):
        want = want.prod(d, keepdim=bool(keepdims))
    model = _file(axes, keepdims, opset)
    got = _run(model, x.numpy())
    assert (got != want.numpy()).any()                  # ONNX Runtime's kernel saturates
    case = Case(model, {"x": x.numpy()}, {"y": want.numpy()}, "body", 0, 0, 0.0, 0.0, nodes=["prod"], opset=opset)
    patches = int_prod_patches(case)
    assert len(patches) == 1 and (patches[0].check, patches[0].kind) == ("op-compat", "runtime")
    fixed = apply(model, patches[0])
    onnx.shape_inference.infer_shapes(fixed, strict_mode=True)          # the new nodes type-check
    assert np.array_equal(_run(fixed, x.numpy()), want.numpy())


def test_no_patch_where_the_kernel_computes_the_product():
    x = np.arange(1, 7 * 33 + 1, dtype=np.int64).reshape(7, 33) % 3 + 1        # no overflow past a row of 3s
    model = _file([1], 0, 18, shape=(7, 33))
    case = Case(model, {"x": x}, {"y": x.prod(1)}, "body", 0, 0, 0.0, 0.0, nodes=["prod"], opset=18)
    assert int_prod_patches(case) == []
