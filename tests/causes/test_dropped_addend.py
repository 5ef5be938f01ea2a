"""The dropped addend (propose/edits/dropped_addend.py, onnx/edit/lowerings/dropped_addend.py): torch's graph adds a
small number the dynamo file does not (its optimizer's ``x + 0`` rule matches a constant within 1e-8 of 0).  On a
bare graph the edit puts ``Add(x, c)`` before one input of one node; on a small model (one Linear, then
``log(relu(x) + 1e-10)``: -inf in the file where torch has log(1e-10), and finite but lower where relu(x) is tiny)
the engine names the dropped addend, verified, and ``repair``'s file checks ok.  The models are this module's
own functions (``tests/causes/test_dropped_addend.py:tiny_log``); the two runs of the engine sit behind ``drifts``."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn


class _LogEps(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.05 * torch.log(torch.relu(x - 0.5) * torch.where(x > 1.0, 1.0, 1e-6) + 1e-10)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _LogEps()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def tiny_log() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 16)


def _graph():
    from onnx import TensorProto, helper

    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Log", ["p"], ["y"], name="node_log"),
                           helper.make_node("Neg", ["p"], ["z"], name="node_neg")], "g",
                          [vi("p", TensorProto.FLOAT, [None])],
                          [vi("y", TensorProto.FLOAT, [None]), vi("z", TensorProto.FLOAT, [None])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_the_edit_adds_the_number_before_that_input_only():
    import onnx
    import onnxruntime as ort

    from drifttui.core.onnx.edit.lowerings.dropped_addend import apply_dropped_addend

    p = np.array([0.0, 1e-12, 0.5], np.float32)
    model = _graph()
    apply_dropped_addend(model, {"node": "node_log", "input": 0, "value": 1e-10})
    onnx.checker.check_model(model)
    y, z = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"p": p})
    np.testing.assert_allclose(y, torch.log(torch.from_numpy(p) + 1e-10).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(z, -p)            # the other reader keeps the bare value


def test_the_edit_refuses_an_input_that_is_not_there():
    from drifttui.core.onnx.edit.lowerings.dropped_addend import apply_dropped_addend

    with pytest.raises(ValueError, match="with an input 3"):
        apply_dropped_addend(_graph(), {"node": "node_log", "input": 3, "value": 1e-10})


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "test_dropped_addend")


@pytest.mark.drifts
def test_the_dropped_eps_is_named_verified_and_repaired(explained):
    from tests.causes.form_suite import assert_verified_and_repaired

    assert_verified_and_repaired(explained, ("tiny_log", "dynamo"),
                                 ("lowering", "rewrite", {"rewrite": "dropped_addend", "value": 1e-10},
                                  "the export dropped the addend"), "body")


@pytest.mark.drifts
def test_the_torchscript_file_keeps_the_add(explained):
    from tests.causes.form_suite import assert_clean

    assert_clean(explained, ("tiny_log", "torchscript"))
