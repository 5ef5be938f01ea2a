"""Constants in the alignment by value: of the forward (``causal``, ``locate/causal_values``), of the file
(``closest``, ``locate/align_graph``).

forms40y's ``hmm_stay`` builds its allowed transitions from ``torch.arange(8)``; the TorchScript file folds them into
one constant, and its lowering of ``diagonal`` computes the column indices ``0..7`` from the shape of the masked
log-probabilities, after them.  The alignment found ``arange`` there, and ``causal`` then dropped the values of every
call fed by ``arange`` computed before it (the ``masked_fill``, the ``log_softmax``): the drift was told "in torch's
arange".  A call computed from no input of the module is a constant of the forward: a value equal to it later in the
file contradicts nothing.  On a bare graph: the masked scores stay found.

forms40y's ``ntxent_positive`` (TorchScript): ``closest`` gave the NaN diagonal's call the lowering's int64 window
``[0, 1, ...]`` of its shape (a constant, nearer to torch's values than NaN), so the call had no nodes and the patch
was told by the next call (``cat``).  A call computed from the module's inputs is held by a value computed from the
case's feeds (not through their shapes alone), and an If's branches read outer values: its ancestors."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _case():
    """x (2, 4) -> Where(m, -inf, x) -> masked; Range(0, Shape(masked)[1], 1) -> late (0..3, computed after it)."""
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Where", ["m", "ninf", "x"], ["masked"], name="masked_fill"),
             helper.make_node("Shape", ["masked"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "one"], ["n"], name="n", axis=0),
             helper.make_node("Range", ["zero", "n", "one"], ["late"], name="range")]
    inits = [numpy_helper.from_array(np.array([[False, True, True, True]] * 2), "m"),
             numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf"),
             numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "one")]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [2, 4])], [vi("late", TensorProto.INT64, [4])], inits)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    arange = np.arange(4)
    masked = np.where(arange[None, :] > 0, -np.inf, x).astype(np.float32)
    ops = [("placeholder", "x", x, [], "float32"), ("call_function", "torch.arange", arange, [], "int64"),
           ("call_function", "torch.Tensor.gt", arange[None, :] > 0, [1], "bool"),
           ("call_function", "torch.Tensor.masked_fill", masked, [0, 2], "float32")]
    case = SimpleNamespace(model=helper.make_model(g), feeds={"x": x})
    return case, ops, {0: "x", 1: "late", 3: "masked"}


def test_a_constant_of_the_forward_found_late_in_the_file_drops_no_call_computed_before_it():
    from drifttui.core.explain.causes.locate.causal_values import causal

    case, ops, found = _case()
    assert causal(case, ops, found, {}) == found       # the masked_fill keeps its value: arange vouches for nothing


def test_an_input_of_the_module_found_after_its_reader_still_moves_or_drops_it():
    from drifttui.core.explain.causes.locate.causal_values import causal

    case, ops, found = _case()
    ops[1] = ("call_function", "torch.Tensor.__getitem__", ops[1][2], [0], "int64")   # now computed from x
    assert 3 not in causal(case, ops, found, {})       # the call's value before its input's: a coincidence, dropped


def _diagonal_in_an_if():
    """TorchScript's ``diagonal`` of x (3, 3): Mul(x, EyeLike) -> ReduceSum -> an If whose branch slices the sums (an
    outer value its node never lists as an input), beside the lowering's int64 window (ConstantOfShape, CumSum) of
    the diagonal's shape; torch's diagonal, and x, found."""
    vi = helper.make_tensor_value_info
    branch = helper.make_graph([helper.make_node("Slice", ["sums", "b0", "e3"], ["cut"], name="cut")], "then", [],
                               [vi("cut", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("EyeLike", ["z"], ["eye"], name="eye"),
             helper.make_node("Mul", ["x", "eye"], ["prod"], name="mul"),
             helper.make_node("ReduceSum", ["prod", "axes"], ["sums"], name="sum", keepdims=0),
             helper.make_node("ConstantOfShape", ["three"], ["ones"], name="ones",
                              value=numpy_helper.from_array(np.ones(1, np.int64))),
             helper.make_node("CumSum", ["ones", "zero"], ["window"], name="window"),
             helper.make_node("If", ["yes"], ["y"], name="pick", then_branch=branch, else_branch=branch)]
    inits = [numpy_helper.from_array(np.zeros((3, 3), np.float32), "z"),
             numpy_helper.from_array(np.array([-1], np.int64), "axes"),
             numpy_helper.from_array(np.array([0], np.int64), "b0"), numpy_helper.from_array(np.array([3], np.int64), "e3"),
             numpy_helper.from_array(np.array([3], np.int64), "three"), numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(True), "yes")]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [3, 3])], [vi("y", TensorProto.FLOAT, [3])], inits)
    x = np.array([[1.5, -np.inf, -np.inf], [0.5, 2.5, -np.inf], [0.25, 0.75, 3.5]], np.float32)
    ops = [("placeholder", "x", x, [], "float32"),
           ("call_function", "torch.Tensor.diagonal", np.diagonal(x).copy(), [0], "float32")]
    with np.errstate(invalid="ignore"):         # -inf * 0: the NaN the lowering makes
        prod = x * np.eye(3, dtype=np.float32)
        sums = prod.sum(-1)
    vals = {"x": x, "eye": np.eye(3, dtype=np.float32), "prod": prod,
            "ones": np.ones(3, np.int64), "window": np.arange(1, 4), "y": np.full(3, np.nan, np.float32)}
    vals["sums"] = sums
    return SimpleNamespace(model=helper.make_model(g), feeds={"x": x}), ops, {0: "x"}, vals


def test_a_calls_nodes_are_those_of_its_computed_value_not_a_constant_index_vector_of_its_shape():
    from drifttui.core.explain.causes.locate.align_graph import call_group

    case, ops, found, vals = _diagonal_in_an_if()
    # the NaN diagonal (the If's value, reading the sums from its branch) is the call's, the window [1, 2, 3] is not
    assert call_group(case, ops, found, 1, vals) == ["mul", "sum"]
