"""fuzzM (session 48): ONNX Runtime's Elu-family kernels compute ``exp(z) - 1`` in float32 (``celu(x, alpha=-1e4)``:
``alpha * (exp(x / alpha) - 1)`` cancels where ``|x / alpha| << 1`` and ``|alpha|`` scales the loss back up, 1e-3 off
torch's expm1).  ``elu_expm1`` writes the node out with the accurate expm1 form; and a float64 region holding an op
ONNX Runtime has no double kernel for (``Elu``) computes it by its ONNX definition (``function_body.py``)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

from drifttui.core.explain.causes.propose.numerics.double_kernels import to_expand
from drifttui.core.onnx.edit.numerics.origin64 import apply_origin_float64
from drifttui.core.onnx.edit.rewrite_registry import REWRITES


def _one(op: str, **attrs: float) -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="act", **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4096])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4096])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


X = np.random.default_rng(0).normal(0, 5, 4096).astype(np.float32)


@pytest.mark.parametrize("op, attrs, torch_fn", [
    ("Celu", {"alpha": -1e4}, lambda t: torch.celu(t, -1e4)),
    ("Celu", {"alpha": 300.0}, lambda t: torch.celu(t, 300.0)),
    ("Elu", {"alpha": 1e4}, lambda t: torch.nn.functional.elu(t, 1e4)),
    ("Selu", {}, torch.selu)])
def test_the_elu_family_written_with_the_accurate_expm1_computes_what_torch_computes(op, attrs, torch_fn):
    model = _one(op, **attrs)
    want = torch_fn(torch.from_numpy(X)).numpy()
    REWRITES["elu_expm1"](model, {"node": "act"})
    onnx.checker.check_model(model, full_check=True)
    assert all(n.op_type != op for n in model.graph.node)
    got = _run(model, X)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_the_celu_kernel_is_what_drifts():
    """The premise: ONNX Runtime's own Celu is 100x further off torch than the rewrite on these values."""
    want = torch.celu(torch.from_numpy(X), -1e4).numpy()
    model = _one("Celu", alpha=-1e4)
    before = np.abs(_run(model, X) - want).max()
    REWRITES["elu_expm1"](model, {"node": "act"})
    assert before > 1e-4 and before > 100 * np.abs(_run(model, X) - want).max()


def test_a_float64_region_computes_an_op_without_a_double_kernel_by_its_definition():
    model = _one("Elu", alpha=0.5)
    want = torch.nn.functional.elu(torch.from_numpy(X).double(), 0.5).numpy()
    ops = to_expand(model, model.graph.node)
    assert ops == ["Elu"]
    apply_origin_float64(model, {"nodes": ["act"], "inputs": ["x"], "outputs": ["y"], "expand": ops})
    assert "Elu" not in {n.op_type for n in model.graph.node} and "Exp" in {n.op_type for n in model.graph.node}
    got = _run(model, X)                     # without the expansion ONNX Runtime refuses a double Elu
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-7)
