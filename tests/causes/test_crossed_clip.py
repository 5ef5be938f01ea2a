"""The crossed Clip (propose/edits/crossed_clip.py, onnx/edit/lowerings/crossed_clip.py): the dynamo exporter's
optimizer fuses two successive clamps into one Clip whose bounds cross, and ONNX's Clip then gives the upper bound
where torch's order gives the later lower bound.  On a bare graph the edit splits the Clip (upper bound first); on a
small model (one Linear, then ``relu(x.clamp(-2, -0.25))``: torch 0, the fused Clip(x, 0, -0.25) -0.25) the engine
names the crossed bounds, verified, and ``repair``'s file checks ok.  The models are this module's own functions;
the two runs of the engine sit behind ``drifts``."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn


class _CappedRelu(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(x.clamp(-2.0, -0.25))


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _CappedRelu()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def tiny_capped() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 16)


def _graph(lo: float, hi: float):
    from onnx import TensorProto, helper, numpy_helper

    vi = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(np.asarray(lo, np.float32), "lo"),
             numpy_helper.from_array(np.asarray(hi, np.float32), "hi")]
    g = helper.make_graph([helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="node_clip")], "g",
                          [vi("x", TensorProto.FLOAT, [None])], [vi("y", TensorProto.FLOAT, [None])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_the_edit_applies_the_upper_bound_first():
    import onnx
    import onnxruntime as ort

    from drifttui.core.onnx.edit.lowerings.crossed_clip import apply_crossed_clip

    x = np.array([-3.0, 0.5, 1.5, 4.0], np.float32)
    model = _graph(2.0, 1.0)
    apply_crossed_clip(model, {"node": "node_clip"})
    onnx.checker.check_model(model)
    (y,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(y, torch.from_numpy(x).clamp(max=1.0).clamp(min=2.0).numpy())


def test_the_edit_refuses_bounds_that_do_not_cross():
    from drifttui.core.onnx.edit.lowerings.crossed_clip import apply_crossed_clip

    with pytest.raises(ValueError, match="no constant bounds that cross"):
        apply_crossed_clip(_graph(0.0, 1.0), {"node": "node_clip"})


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "test_crossed_clip")


@pytest.mark.drifts
def test_the_crossed_clip_is_named_verified_and_repaired(explained):
    from tests.causes.form_suite import assert_verified_and_repaired

    assert_verified_and_repaired(explained, ("tiny_capped", "dynamo"),
                                 ("lowering", "rewrite", {"rewrite": "crossed_clip"}, "bounds that cross"), "body")


@pytest.mark.drifts
def test_the_torchscript_file_keeps_two_clips(explained):
    from tests.causes.form_suite import assert_clean

    assert_clean(explained, ("tiny_capped", "torchscript"))
