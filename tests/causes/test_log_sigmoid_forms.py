"""The two stable forms of ``Log(Sigmoid(x))`` / ``Log(1 - Sigmoid(x))`` (onnx/edit/lowerings/ort_workarounds.py), run in real
ONNX Runtime: both finite where the lowering is -inf; in float16 with each op rounded as torch rounds, only torch's
own formula ``log(1 - sigmoid(x)) = log_sigmoid(x) - x`` gives torch's ``binary_cross_entropy_with_logits``."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.onnx.edit.patches import Patch, apply


def _bce(dtype=TensorProto.FLOAT):
    """TorchScript's lowering: -(t log s + (1 - t) log(1 - s)), s = Sigmoid(x)."""
    one = numpy_helper.from_array(np.ones((), np.float16 if dtype == TensorProto.FLOAT16 else np.float32), "one")
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"), helper.make_node("Log", ["s"], ["ls"], name="log"),
             helper.make_node("Sub", ["one", "s"], ["oms"], name="sub"),
             helper.make_node("Log", ["oms"], ["l1s"], name="log1"),
             helper.make_node("Sub", ["one", "t"], ["omt"], name="subt"),
             helper.make_node("Mul", ["t", "ls"], ["a"], name="mul"), helper.make_node("Mul", ["omt", "l1s"], ["b"], name="mul1"),
             helper.make_node("Add", ["a", "b"], ["c"], name="add"), helper.make_node("Neg", ["c"], ["y"], name="neg")]
    io = [helper.make_tensor_value_info(n, dtype, [8]) for n in ("x", "t")]
    g = helper.make_graph(nodes, "g", io, [helper.make_tensor_value_info("y", dtype, [8])], [one])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _form(model, form):
    return apply(model, Patch({"op": "rewrite", "rewrite": "workaround", "form": form, "node": "sig"}, "stability", "", ""))


def test_both_stable_forms_are_finite_where_the_lowering_is_not_and_compute_torchs_loss():
    x = torch.tensor([-120.0, -30.0, -2.0, 0.0, 0.5, 3.0, 40.0, 120.0])
    t = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    want = F.binary_cross_entropy_with_logits(x, t, reduction="none").numpy()
    feeds = {"x": x.numpy(), "t": t.numpy()}
    assert not np.isfinite(run_ort(_bce(), feeds)["y"]).all()
    for form in ("log_sigmoid", "log_sigmoid_torch"):
        got = run_ort(_form(_bce(), form), feeds)["y"]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=form)


def test_in_float16_with_torchs_roundings_only_torchs_formula_gives_torchs_loss():
    """Each float16 op computed in float32 and rounded (opmath's per-op form) after each stable form: torch rounds
    ``log_sigmoid(x)`` and then ``x - log_sigmoid(x)``; ``-Softplus(x)`` rounds once, one float16 step apart."""
    from drifttui.core.explain.causes.locate.case import Case
    from drifttui.core.explain.causes.propose.numerics.opmath import opmath_patches

    x = torch.linspace(-12, 12, 8 * 64).half().reshape(64, 8)
    t = (torch.arange(8) % 2).half()
    want = F.binary_cross_entropy_with_logits(x, t.expand_as(x), reduction="none").float().numpy()
    gaps = {}
    for form in ("log_sigmoid", "log_sigmoid_torch"):
        stable = _form(_bce(TensorProto.FLOAT16), form)
        case = Case(stable, {"x": x[0].numpy(), "t": t.numpy()}, {"y": want[0]}, "", 0, 0, 1e-4, 1e-4,
                    nodes=[n.name for n in stable.graph.node])
        per_op = next(p for p in opmath_patches(case) if p.spec["form"] == "per_op")
        model = apply(stable, per_op)
        got = np.stack([run_ort(model, {"x": row.numpy(), "t": t.numpy()})["y"].astype(np.float32) for row in x])
        gaps[form] = float(np.abs(got - want).max())
    assert gaps["log_sigmoid_torch"] == 0.0 and gaps["log_sigmoid"] > 0.0, gaps
