"""The ``fmod_floor`` edit (onnx/edit/lowerings/singular.py) on a real ONNX graph run by ONNX Runtime: a
``Floor(Div(a, b))`` and the remainder built on it (``a - Floor(a / b) * b``, both exporters' lowering of
``torch.remainder``) compute torch's floor division and remainder on multiples of ``b``, where the
unedited graph is one ``b`` off; the edit refuses a Floor that floors no Div."""
from __future__ import annotations

import numpy as np
import pytest


def _remainder_graph():
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Div", ["a", "b"], ["q"], name="/body/Div"),
             helper.make_node("Floor", ["q"], ["f"], name="/body/Floor"),
             helper.make_node("Mul", ["f", "b"], ["m"], name="/body/Mul"),
             helper.make_node("Sub", ["a", "m"], ["r"], name="/body/Sub"),
             helper.make_node("Floor", ["a"], ["fa"], name="/body/Floor_1")]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("a", TensorProto.FLOAT, [None]), vi("b", TensorProto.FLOAT, [1])],
                          [vi("r", TensorProto.FLOAT, [None]), vi("f", TensorProto.FLOAT, [None]),
                           vi("fa", TensorProto.FLOAT, [None])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, a, b):
    import onnxruntime as ort

    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(["r", "f"], {"a": a, "b": np.array([b], np.float32)})


@pytest.mark.parametrize("b", [0.3, -0.3, 0.1, 0.7])
def test_the_edited_floor_computes_torchs_floor_division_and_remainder(b):
    import onnx
    import torch

    from drifttui.core.onnx.edit.lowerings.singular import apply_fmod_floor

    a = torch.arange(-60, 61, dtype=torch.float32) * abs(b)
    model = _remainder_graph()
    r0, f0 = _run(model, a.numpy(), b)
    want_r, want_f = torch.remainder(a, b).numpy(), torch.floor_divide(a, b).numpy()
    assert np.abs(f0 - want_f).max() == 1.0          # the plain lowering is one off on some multiples
    apply_fmod_floor(model, {"node": "/body/Floor"})
    onnx.checker.check_model(model)
    r, f = _run(model, a.numpy(), b)
    assert np.abs(f - want_f).max() == 0.0
    assert np.abs(r - want_r).max() < 1e-5 < np.abs(r0 - want_r).max()


def test_a_floor_of_no_division_is_refused():
    from drifttui.core.onnx.edit.lowerings.singular import apply_fmod_floor

    with pytest.raises(ValueError, match="does not floor a Div"):
        apply_fmod_floor(_remainder_graph(), {"node": "/body/Floor_1"})


def _cast_graph():
    """TorchScript's float floor_divide: Div -> Cast(int64) -> Cast(float)."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Div", ["a", "b"], ["q"], name="/body/Div"),
             helper.make_node("Cast", ["q"], ["i"], name="/body/Cast", to=TensorProto.INT64),
             helper.make_node("Cast", ["i"], ["f"], name="/body/Cast_1", to=TensorProto.FLOAT)]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("a", TensorProto.FLOAT, [None]), vi("b", TensorProto.FLOAT, [1])],
                          [vi("f", TensorProto.FLOAT, [None])], value_info=[vi("q", TensorProto.FLOAT, [None])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("b", [0.05, 0.3, -0.3])
def test_a_truncating_cast_of_a_division_is_rewritten_as_torchs_floor_division(b):
    """TorchScript's float ``//``: Div + a Cast to int64 truncates the rounded quotient; rewritten, the Cast reads
    torch's fmod floor division (right on multiples of b and on negative quotients), still an int64."""
    import onnx
    import onnxruntime as ort
    import torch

    from drifttui.core.onnx.edit.lowerings.singular import apply_fmod_floor, floor_of_div

    a = torch.arange(-60, 61, dtype=torch.float32) * abs(b)
    model = _cast_graph()
    assert floor_of_div(model, model.graph.node[1]) is model.graph.node[0]
    assert floor_of_div(model, model.graph.node[2]) is None          # a Cast of a Cast: no quotient

    def run(m):
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return s.run(["f"], {"a": a.numpy(), "b": np.array([b], np.float32)})[0]

    want = torch.floor_divide(a, b).numpy()
    assert np.abs(run(model) - want).max() >= 1.0
    apply_fmod_floor(model, {"node": "/body/Cast"})
    onnx.checker.check_model(model)
    assert np.abs(run(model) - want).max() == 0.0
