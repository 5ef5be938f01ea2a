"""A drift the dynamo exporter's ONNX optimizer made, told as the optimizer's (propose/reexport/variants.py,
optimizer_diff.py).  For a dynamo file the origin is first re-exported *without* the optimizer: when that computes
what torch computes, the rewrite is the cause, and the two graphs' computing nodes say which op it changed.  The
model: a gain within 2e-6 of 1, then a bucket of the value in thousandths (a hashed feature): the optimizer's
``x * 1`` rule drops the gain, and the floor of values near 1e5 turns 2e-6 into a fifth of a bucket.  No catalogue entry or graph
edit knows this form; the re-export does.  The engine's runs sit behind ``drifts``."""
from __future__ import annotations

import pytest
import torch
from torch import nn


class _Rounded(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.remainder(torch.floor(x * 1.000002 * 1000), 8.0)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _Rounded()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stem(x) + self.body(x * 100.0)


def tiny_rounded() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 16)


def _graph(ops: list[tuple[str, float]]):
    """x -> each (op, constant) in turn -> y, the constants as initializers."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    nodes, inits, last = [], [], "x"
    for i, (op, c) in enumerate(ops):
        inits.append(numpy_helper.from_array(np.array(c, np.float32), f"c{i}"))
        out = "y" if i == len(ops) - 1 else f"v{i}"
        nodes.append(helper.make_node(op, [last] if op in ("Floor", "Relu") else [last, f"c{i}"], [out], name=f"n{i}"))
        last = out
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_the_change_names_the_op_the_optimizer_left_out_with_its_constant():
    from drifttui.core.explain.causes.propose.reexport.optimizer_diff import optimizer_change

    before = _graph([("Mul", 1.000002), ("Mul", 256.0), ("Floor", 0.0)])
    after = _graph([("Mul", 256.0), ("Floor", 0.0)])
    assert optimizer_change(after, before) == "the optimizer left out Mul (x * 1.000002)"


def test_the_change_names_what_the_optimizer_put_in_their_place():
    from drifttui.core.explain.causes.propose.reexport.optimizer_diff import optimizer_change

    before = _graph([("Add", 1.0), ("Relu", 0.0), ("Add", -1.0)])
    after = _graph([("Sub", 3.0), ("Add", -1.0)])
    assert optimizer_change(after, before) == "the optimizer put Sub (x - 3) where the lowering has Add (x + 1), Relu"


def test_the_same_ops_with_other_constants_tell_nothing_and_folding_is_not_a_change():
    from onnx import helper

    from drifttui.core.explain.causes.propose.reexport.optimizer_diff import optimizer_change

    before = _graph([("Mul", 2.0), ("Add", 1.0)])
    # a Cast of a constant (folded by the optimizer) is constant folding, not a computing node
    before.graph.node.insert(0, helper.make_node("Cast", ["c0"], ["c0_cast"], to=1, name="fold"))
    assert optimizer_change(_graph([("Mul", 2.5), ("Add", 1.0)]), before) == ""
    # nor is a CastLike of a constant like x (its second input gives the type only): torch.isclose's atol,
    # which the optimizer folds and whose Add it drops, is told as the Add alone
    unfolded = _graph([("Add", 1e-8), ("Mul", 2.0)])
    unfolded.graph.node.insert(0, helper.make_node("CastLike", ["c0", "x"], ["c0_like"], name="like"))
    unfolded.graph.node[1].input[1] = "c0_like"
    assert optimizer_change(_graph([("Mul", 2.0)]), unfolded) == "the optimizer left out Add (x + 1e-08)"


def test_another_export_is_told_only_where_it_parts_at_the_node_named_wrong():
    from drifttui.core.explain.causes.propose.reexport.optimizer_diff import export_change

    origin = _graph([("Mul", 256.0), ("Floor", 0.0)])
    witness = _graph([("Mul", 1.000002), ("Mul", 256.0), ("Floor", 0.0)])
    who = "the TorchScript exporter"
    assert (export_change(origin, witness, who, ["Mul"])
            == "the file computes nothing where the TorchScript exporter computes Mul (x * 1.000002)")
    assert export_change(origin, witness, who, ["Floor"]) == ""      # the diff is not about the node named
    many = _graph([("Add", 1.0)] * 6 + [("Mul", 256.0), ("Floor", 0.0)])
    assert export_change(origin, many, who, ["Add"]) == ""          # six ops apart: two graphs, no story


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "test_optimizer_rewrite")


@pytest.mark.drifts
def test_the_optimizer_rewrite_is_told_verified_and_repaired(explained):
    from tests.causes.form_suite import assert_verified_and_repaired

    assert_verified_and_repaired(explained, ("tiny_rounded", "dynamo"),
                                 ("lowering", "reexport", {"exporter": "dynamo", "optimize": False},
                                  "the optimizer left out Mul (x * 1.000002)"), "body")


@pytest.mark.drifts
def test_the_torchscript_file_keeps_the_gain(explained):
    from tests.causes.form_suite import assert_clean

    assert_clean(explained, ("tiny_rounded", "torchscript"))


def test_a_call_the_optimizer_dropped_does_not_shift_the_file_s_nodes_onto_other_calls():
    import numpy as np

    from drifttui.core.explain.causes.locate.fx_localise import FxNode, _match

    x = torch.linspace(-3, 3, 8)
    # torch's program of the origin: x * 1.000002, then * 1000, then a floor; the file kept the second Mul only
    program = [("mul", "aten.mul.Tensor", x * 1.000002, "", "aten.mul.Tensor", ()),
               ("mul_1", "aten.mul.Tensor", x * 1.000002 * 1000, "", "aten.mul.Tensor", ()),
               ("floor", "aten.floor.default", torch.floor(x * 1.000002 * 1000), "", "aten.floor.default", ())]
    groups = [FxNode("mul_2", "aten.mul.Tensor", ["node_mul_2"], ["Mul"]),
              FxNode("floor", "aten.floor.default", ["node_floor"], ["Floor"])]
    shapes = {"mul_2": (8,), "floor": (8,)}
    file_values = {"mul_2": (x * 1000).numpy(), "floor": torch.floor(x * 1000).numpy()}
    got = _match(groups, program, shapes, file_values)
    np.testing.assert_array_equal(got["mul_2"], x * 1.000002 * 1000)     # the call it stands for, not x * 1.000002
    np.testing.assert_array_equal(got["floor"], program[2][2])
    # without the file's values (or with as many calls as nodes) the order alone decides, as before
    assert torch.equal(_match(groups, program, shapes, {})["mul_2"], x * 1.000002)
