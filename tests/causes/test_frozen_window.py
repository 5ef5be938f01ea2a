"""A pooling window the export took from the example's size of a dim the file declares dynamic
(propose/edits/frozen_window.py, onnx/edit/lowerings/adaptive_window.py; batch 41E of session 40).

``F.max_pool1d(h, h.size(2))`` traced by TorchScript and ``adaptive_avg_pool1d(h, 4)`` lowered by the dynamo exporter
on a dynamic length are a ``MaxPool`` / ``AveragePool`` whose ``kernel_shape`` = ``strides`` hold the example's size:
at another length the file pools the first ``n * kernel`` steps.  Real ONNX Runtime against real torch on bare
graphs: the rewrite computes torch's adaptive windows from the runtime size, at several sizes; the proposer names a
tiling pool on a dynamic dim that leaves steps out on this sample, and nothing where the dim is static, the windows
overlap (a plain ``MaxPool1d(3, 1)``) or tile the runtime size already."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.frozen_window import frozen_window_patches
from drifttui.core.onnx.edit.patches import Patch, apply


def _pool(op: str, kernel: list[int], dims: list, strides: list[int] = None) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y"], name="pool", kernel_shape=kernel, strides=strides or kernel)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _rewritten(model: onnx.ModelProto, windows: list[int]) -> onnx.ModelProto:
    return apply(model, Patch({"op": "rewrite", "node": "pool", "rewrite": "adaptive_window", "windows": windows},
                              "dynamic-axes", "", ""))


@pytest.mark.parametrize("length", [32, 45, 63])
def test_a_global_max_of_the_example_length_pools_the_whole_runtime_length(length):
    model = _pool("MaxPool", [32], [2, 3, "T"])          # max_pool1d(h, h.size(2)) traced at T = 32
    x = np.random.default_rng(length).standard_normal((2, 3, length)).astype(np.float32)
    x[..., -1] = 10.0                                     # the peak at the last step
    want = F.max_pool1d(torch.from_numpy(x), length).numpy()
    assert np.array_equal(_run(model, x), want) == (length == 32)     # the file: the first 32 steps only
    np.testing.assert_allclose(_run(_rewritten(model, [1]), x), want, rtol=0, atol=0)


@pytest.mark.parametrize("length", [64, 71, 79])
def test_an_adaptive_average_lowered_at_the_example_length_is_torchs_at_every_length(length):
    model = _pool("AveragePool", [16], [2, 3, "T"])      # adaptive_avg_pool1d(h, 4) lowered at T = 64
    x = np.random.default_rng(length).standard_normal((2, 3, length)).astype(np.float32)
    want = F.adaptive_avg_pool1d(torch.from_numpy(x), 4).numpy()
    np.testing.assert_allclose(_run(_rewritten(model, [4]), x), want, rtol=1e-6, atol=1e-6)


def test_an_adaptive_max_over_height_and_width_and_a_window_of_one_step_kept():
    model = _pool("MaxPool", [8, 8], [1, 3, "H", "W"])   # AdaptiveMaxPool2d((2, 2)) lowered at 16 x 16
    x = np.random.default_rng(0).standard_normal((1, 3, 19, 22)).astype(np.float32)
    want = F.adaptive_max_pool2d(torch.from_numpy(x), (2, 2)).numpy()
    np.testing.assert_allclose(_run(_rewritten(model, [2, 2]), x), want, rtol=0, atol=0)
    ones = _pool("AveragePool", [1, 16], [1, 3, "H", "W"])     # AdaptiveAvgPool2d((None, 1)): height kept
    np.testing.assert_allclose(_run(_rewritten(ones, [0, 1]), x),
                               F.adaptive_avg_pool2d(torch.from_numpy(x), (None, 1)).numpy(), rtol=1e-6, atol=1e-6)


def _case(model: onnx.ModelProto, x: np.ndarray) -> Case:
    return Case(model, {"x": x}, {"y": np.zeros(1, np.float32)}, "body", 0, 0, 1e-4, 1e-4, nodes=["pool"], opset=17)


def test_the_proposer_names_a_tiling_pool_on_a_dynamic_dim_that_leaves_steps_out():
    x = np.random.default_rng(1).standard_normal((2, 3, 45)).astype(np.float32)
    [patch] = list(frozen_window_patches(_case(_pool("MaxPool", [32], [2, 3, "T"]), x), {"x": [2, 3, "T"]}))
    assert patch.check == "dynamic-axes" and patch.spec["windows"] == [1] and patch.spec["baked"] == [32]
    assert "example's size" in patch.why and "at run time that dim is 45" in patch.why, patch.why
    # a static dim, overlapping windows, or windows that tile the runtime length: no story
    assert list(frozen_window_patches(_case(_pool("MaxPool", [32], [2, 3, 45]), x), {"x": [2, 3, 45]})) == []
    assert list(frozen_window_patches(_case(_pool("MaxPool", [3], [2, 3, "T"], [1]), x), {"x": [2, 3, "T"]})) == []
    assert list(frozen_window_patches(_case(_pool("AveragePool", [15], [2, 3, "T"]), x), {"x": [2, 3, "T"]})) == []
