"""A selection lowered as a product with a 0/1 mask (``propose/edits/mask_select.py``, ``rewrite: mask_select``).

Both exporters lower ``torch.diagonal`` as ``ReduceSum(Transpose(x) * EyeLike(k=offset))``: an off-diagonal ``-inf``
(a causal log-attention, masked self-pairs) times the mask's 0 is NaN, and the diagonal is NaN where torch's is
finite (forms40y).  The patch computes the product as a selection, ``Where(mask == 0, 0, x * mask)``.  On a bare
graph (the proposer and the edit), the cases it must leave alone, and a small model through the engine (``drifts``).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn


def _diagonal_case(x: np.ndarray, other: str = "eye"):
    """x (2, 4, 4) -> Mul(x, mask) -> ReduceSum(-1) -> y (2, 4): the diagonal as the exporters lower it, the mask an
    EyeLike of a ConstantOfShape (``other="half"``: a constant 0.5 everywhere, no mask; ``"zero"``: a constant 0)."""
    from onnx import TensorProto, helper, numpy_helper

    vi = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array([4, 4], np.int64), "shape"),
             numpy_helper.from_array(np.array([-1], np.int64), "axes")]
    if other == "eye":
        nodes = [helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name="zeros",
                                  value=numpy_helper.from_array(np.zeros(1, np.float32))),
                 helper.make_node("EyeLike", ["zeros"], ["mask"], name="eye")]
    else:
        nodes = []
        inits.append(numpy_helper.from_array(np.full((4, 4), 0.5 if other == "half" else 0.0, np.float32), "mask"))
    nodes += [helper.make_node("Mul", ["x", "mask"], ["prod"], name="mul"),
              helper.make_node("ReduceSum", ["prod", "axes"], ["y"], name="sum", keepdims=0)]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [2, 4, 4])], [vi("y", TensorProto.FLOAT, [2, 4])],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    want = torch.from_numpy(x).diagonal(dim1=-2, dim2=-1).numpy()
    return SimpleNamespace(model=model, feeds={"x": x}, expected={"y": want}, elem_types={}, module="body",
                           nodes=[n.name for n in nodes])


def _causal_logp() -> np.ndarray:
    s = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0))
    x = s.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf")).log_softmax(-1)
    x[1, 2, 2] = float("-inf")            # a selected element that is -inf itself: torch's diagonal keeps it
    return x.numpy()


def _run(model, feeds):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def test_a_diagonal_as_an_identity_mask_product_is_proposed_a_selection_that_computes_torchs():
    from drifttui.core.explain.causes.propose.edits.mask_select import mask_select_patches
    from drifttui.core.onnx.edit.lowerings.mask_select import apply_mask_select

    case = _diagonal_case(_causal_logp())
    assert np.isnan(_run(case.model, case.feeds)).any()          # the file: NaN where torch is finite
    patches = mask_select_patches(case, None)
    assert [(p.spec["rewrite"], p.spec["node"], p.spec["mask"], p.check) for p in patches] == \
        [("mask_select", "mul", "mask", "lowering")]
    assert "identity mask (EyeLike" in patches[0].why and "0 * inf is NaN" in patches[0].why
    fixed = type(case.model)()
    fixed.CopyFrom(case.model)
    apply_mask_select(fixed, patches[0].spec)
    got = _run(fixed, case.feeds)
    np.testing.assert_array_equal(got, case.expected["y"])       # the selected -inf kept, the rest exact


def test_two_diagonals_of_one_matrix_are_selected_together_first():
    """``logp.diagonal(1)`` and ``logp.diagonal(-1)`` (NT-Xent's positives): each product alone leaves the other NaN."""
    from onnx import TensorProto, helper, numpy_helper

    from drifttui.core.explain.causes.propose.edits.mask_select import mask_select_patches
    from drifttui.core.onnx.edit.patches import apply

    x = _causal_logp()
    x = np.where(np.eye(4, dtype=bool), -np.inf, np.nan_to_num(x, neginf=-3.0)).astype(np.float32)  # self masked
    t = torch.from_numpy(x)
    want = torch.cat([t.diagonal(1, -2, -1), t.diagonal(-1, -2, -1)], -1).numpy()
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("EyeLike", ["z"], ["up"], name="eye_up", k=1),
             helper.make_node("EyeLike", ["z"], ["down"], name="eye_down", k=-1),
             helper.make_node("Mul", ["x", "up"], ["p_up"], name="mul_up"),
             helper.make_node("Mul", ["x", "down"], ["p_down"], name="mul_down"),
             helper.make_node("ReduceSum", ["p_up", "axes"], ["s_up"], name="sum_up", keepdims=0),
             helper.make_node("ReduceSum", ["p_down", "axes"], ["s_down"], name="sum_down", keepdims=0),
             helper.make_node("Slice", ["s_up", "b0", "e3", "axes"], ["d_up"], name="cut_up"),
             helper.make_node("Slice", ["s_down", "b1", "e4", "axes"], ["d_down"], name="cut_down"),
             helper.make_node("Concat", ["d_up", "d_down"], ["y"], name="cat", axis=-1)]
    ints = {"axes": [-1], "b0": [0], "e3": [3], "b1": [1], "e4": [4]}
    inits = [numpy_helper.from_array(np.zeros((4, 4), np.float32), "z")] + \
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [2, 4, 4])], [vi("y", TensorProto.FLOAT, [2, 6])],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    case = SimpleNamespace(model=model, feeds={"x": x}, expected={"y": want}, elem_types={}, module="body")
    patches = mask_select_patches(case, None)
    assert [p.spec["op"] for p in patches] == ["sequence", "rewrite", "rewrite"]
    assert patches[0].nodes == ["mul_up", "mul_down"]
    np.testing.assert_array_equal(_run(apply(model, patches[0]), case.feeds), want)
    assert np.isnan(_run(apply(model, patches[1]), case.feeds)).any()      # one alone: the other diagonal NaN


@pytest.mark.parametrize("other", ["half", "zero"])
def test_a_product_with_no_0_1_mask_is_left_to_other_stories(other):
    from drifttui.core.explain.causes.propose.edits.mask_select import mask_select_patches

    # 0.5 everywhere is a weight, not a selection; a constant 0 is a coefficient (singular's zero term, beta=0)
    assert mask_select_patches(_diagonal_case(_causal_logp(), other), None) == []


def test_a_0_1_mask_made_from_the_data_is_no_selection():
    """A hard 0/1 target weighing ``log(sigmoid(x))`` (a TorchScript focal loss, forms40j): ``0 * -inf`` there is the
    stable form's story (float32's underflow), not a selection's: the mask must be structure, not data."""
    from onnx import TensorProto, helper

    from drifttui.core.explain.causes.propose.edits.mask_select import mask_select_patches

    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Mul", ["x", "t"], ["prod"], name="mul")]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [2, 4]), vi("t", TensorProto.FLOAT, [2, 4])],
                          [vi("prod", TensorProto.FLOAT, [2, 4])])
    x = np.array([[-np.inf, -1.0, -2.0, -np.inf]] * 2, np.float32)
    t = np.array([[0, 1, 1, 0]] * 2, np.float32)
    case = SimpleNamespace(model=helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                           feeds={"x": x, "t": t}, expected={"prod": np.where(t > 0, x, 0).astype(np.float32)},
                           elem_types={}, module="body")
    assert mask_select_patches(case, None) == []


def test_a_mask_over_finite_values_is_no_story():
    from drifttui.core.explain.causes.propose.edits.mask_select import mask_select_patches

    x = np.random.default_rng(0).standard_normal((2, 4, 4)).astype(np.float32)
    assert mask_select_patches(_diagonal_case(x), None) == []       # nothing non-finite: nothing to select out


def test_a_constant_fill_of_minus_inf_is_no_singular_point_to_guard():
    """TorchScript's ``masked_fill(m, -inf)``: a Constant -inf, a Where, then the diagonal's product.  The first node
    that makes an inf out of inputs holding none is the Constant: the model's own number (torch fills -inf too), not
    a point a lowering left undefined; a guard there fills the mask with 0 instead and can pass a tolerance by luck
    (forms40y's NT-Xent: the self-pair's exp(0) moves a row's logsumexp by 1e-5).  The Mul's selection is the story."""
    from onnx import TensorProto, helper, numpy_helper

    from drifttui.core.explain.causes.locate.case import Case
    from drifttui.core.explain.causes.propose.edits.mask_select import mask_select_patches
    from drifttui.core.explain.causes.propose.edits.singular import singular_patches

    s = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(1))
    upper = torch.ones(4, 4, dtype=torch.bool).triu(1)
    want = s.masked_fill(upper, float("-inf")).diagonal(dim1=-2, dim2=-1).numpy()
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Constant", [], ["fill"], name="fill",
                              value=numpy_helper.from_array(np.array(-np.inf, np.float32))),
             helper.make_node("Where", ["upper", "fill", "s"], ["masked"], name="masked_fill"),
             helper.make_node("EyeLike", ["s0"], ["mask"], name="eye"),
             helper.make_node("Mul", ["masked", "mask"], ["prod"], name="mul"),
             helper.make_node("ReduceSum", ["prod", "axes"], ["y"], name="sum", keepdims=0)]
    inits = [numpy_helper.from_array(upper.numpy(), "upper"), numpy_helper.from_array(np.array([-1], np.int64), "axes"),
             numpy_helper.from_array(np.zeros((4, 4), np.float32), "s0")]
    g = helper.make_graph(nodes, "g", [vi("s", TensorProto.FLOAT, [2, 4, 4])], [vi("y", TensorProto.FLOAT, [2, 4])],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    case = Case(model, {"s": s.numpy()}, {"y": want}, "body", 0, 0, 1e-4, 1e-4, nodes=[n.name for n in nodes])
    guards = [p.spec["node"] for p in singular_patches(case, None) if p.spec["rewrite"] == "nonfinite_guard"]
    assert "fill" not in guards and "mul" in guards
    assert [p.spec["node"] for p in mask_select_patches(case, None)] == ["mul"]


class _SelfWeight(nn.Module):
    """causal attention log-weights over 4 tokens of 8, each token's log-weight on itself (``diagonal``)."""

    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.view(x.shape[0], 4, 8)
        scores = (self.q(t) @ t.transpose(1, 2)).masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf"))
        return x + scores.log_softmax(-1).diagonal(dim1=-2, dim2=-1).repeat(1, 8)


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(32, 32), _SelfWeight()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def model() -> nn.Module:
    torch.manual_seed(0)
    return _Model().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts
@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_a_small_models_diagonal_of_causal_log_weights_is_verified_and_repaired(tmp_path, exporter):
    import warnings

    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model
    from drifttui.core.result import Config
    from tests.causes.conftest import explained_run

    path = tmp_path / f"m-{exporter}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model(), (rows(),), str(path), dynamo=exporter == "dynamo")
    engine, cfg, run, result, exp = explained_run(Config(model=f"{__file__}:model", onnx=str(path),
                                                         inputs=f"{__file__}:rows", samples=3))
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    assert (head.check, head.verified, head.patch.get("rewrite")) == ("lowering", True, "mask_select"), head.message
    assert "diagonal" in head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None and engine.recheck(cfg, fixed.model).verdict == "ok"
