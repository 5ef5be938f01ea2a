"""A constant of the forward in the alignment by value (``locate/align_graph.causal``).

forms40y's ``hmm_stay`` builds its allowed transitions from ``torch.arange(8)``; the TorchScript file folds them into
one constant, and its lowering of ``diagonal`` computes the column indices ``0..7`` from the shape of the masked
log-probabilities, after them.  The alignment found ``arange`` there, and ``causal`` then dropped the values of every
call fed by ``arange`` computed before it (the ``masked_fill``, the ``log_softmax``): the drift was told "in torch's
arange".  A call computed from no input of the module is a constant of the forward: a value equal to it later in the
file contradicts nothing.  On a bare graph: the masked scores stay found."""
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
    from drifttui.core.explain.causes.locate.align_graph import causal

    case, ops, found = _case()
    assert causal(case, ops, found, {}) == found       # the masked_fill keeps its value: arange vouches for nothing


def test_an_input_of_the_module_found_after_its_reader_still_moves_or_drops_it():
    from drifttui.core.explain.causes.locate.align_graph import causal

    case, ops, found = _case()
    ops[1] = ("call_function", "torch.Tensor.__getitem__", ops[1][2], [0], "int64")   # now computed from x
    assert 3 not in causal(case, ops, found, {})       # the call's value before its input's: a coincidence, dropped
