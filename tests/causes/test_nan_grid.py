"""The NaN-propagating rewrite of a GridSample fed NaN coordinates (onnx/edit/lowerings/nan_grid.py, propose/edits/nan_grid.py),
on real ONNX Runtime against real torch."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.nan_grid import nan_grid_patches
from drifttui.core.onnx.edit.patches import apply


def _model(mode: str, opset: int, dims: int = 2) -> onnx.ModelProto:
    xs, gs = ([2, 3, 5, 6], [2, 4, 4, 2]) if dims == 2 else ([2, 3, 2, 5, 6], [2, 2, 4, 4, 3])
    node = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", mode=mode, align_corners=0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs),
                                            helper.make_tensor_value_info("g", TensorProto.FLOAT, gs)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _inputs(dims: int = 2, nan: bool = True) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal([2, 3, 5, 6] if dims == 2 else [2, 3, 2, 5, 6]).astype(np.float32)
    g = np.tanh(rng.standard_normal([2, 4, 4, 2] if dims == 2 else [2, 2, 4, 4, 3])).astype(np.float32)
    if nan:
        g[g[..., 0] > 0.5] = np.nan         # whole coordinates NaN (a 0 / 0 direction)
        g[0, 0, 0, 1] = np.nan              # and one coordinate of a pair alone
    return x, g


@pytest.mark.parametrize("mode,opset,dims", [("linear", 20, 2), ("nearest", 20, 2), ("linear", 16, 2),
                                             ("linear", 20, 3)])
def test_the_rewrite_gives_nan_where_torch_does_and_changes_nothing_else(mode, opset, dims):
    if opset < 20 and dims == 3:
        pytest.skip("5-D GridSample needs opset 20")
    model = _model("bilinear" if mode == "linear" and opset < 20 else mode, opset, dims)
    x, g = _inputs(dims)
    want = F.grid_sample(torch.from_numpy(x), torch.from_numpy(g), mode="bilinear" if mode == "linear" else mode,
                         align_corners=False).numpy()
    patches = nan_grid_patches(Case(model, {"x": x, "g": g}, {"y": want}, "body", 0, 0, 1e-5, 1e-5, opset=opset))
    assert [p.spec["rewrite"] for p in patches] == ["grid_nan_propagate"]
    assert (patches[0].check, patches[0].kind) == ("op-compat", "runtime")
    fixed = apply(model, patches[0])
    onnx.shape_inference.infer_shapes(fixed, strict_mode=True)
    run = lambda m: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(  # noqa: E731
        None, {"x": x, "g": g})[0]
    assert not np.array_equal(run(model), want, equal_nan=True)          # ONNX Runtime samples a pixel there
    assert np.allclose(run(fixed), want, atol=1e-5, equal_nan=True)


def test_never_proposed_where_torchs_value_at_nan_depends_on_the_image():
    node = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", mode="linear", padding_mode="border")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 6]),
                                            helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 4, 4, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    x, g = _inputs()
    assert nan_grid_patches(Case(model, {"x": x, "g": g}, {}, "body", 0, 0, 1e-5, 1e-5)) == []


def test_never_proposed_without_nan_in_the_grid():
    model = _model("linear", 20)
    x, g = _inputs(nan=False)
    assert nan_grid_patches(Case(model, {"x": x, "g": g}, {}, "body", 0, 0, 1e-5, 1e-5)) == []
