"""Which holding value is a call's own (``locate/causal_values.causal``), two coincidences the schema pool drew
(``benchmarks/fuzz_drifts.py --pool schema``, session 41's range 26000-26119, TorchScript):

* ``aten.any.default((x * 100).long())`` (seed 26000): torch's ``True`` (one element) was found in the file's
  scalar constant ``1`` (a Constant the lowering's Reshape reads), and the ``.to(float32)`` after it in another
  constant ``1.0``; the file's ``Greater`` after a ``ReduceSum`` of the integers (not of their non-zero-ness) was
  then told as the ``to``.  A call computed from the module's inputs whose value has one element is not held by a
  value the case computes from none of its feeds (a constant, a size): ``1 == True`` says nothing of it.
* ``type_as(x.view(B, 2, 16), y)`` then ``cosine_similarity`` (seed 26063): the ``reshape`` back to (B, 32) holds
  ``x``, the module's input, which its input's value (the file's ``Cast``) is computed from, so ``causal`` dropped
  it, and the drift was told "in torch's reshape" where ``cosine_similarity``'s clamp is wrong.  The file's own
  ``Reshape`` after the ``Cast`` holds it as closely: the call's value is moved there before it is dropped.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _any_case():
    """x (4,) -> ReduceSum -> s; Greater(s, zero) -> g (bool scalar); int64 constants (``k1``: 1) read by nothing
    torch computes."""
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["g"], name="greater"),
             helper.make_node("Reshape", ["g", "one"], ["out"], name="reshape")]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array(1, np.int64), "k1")]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [4])], [vi("out", TensorProto.BOOL, [1])], inits)
    x = np.array([3.0, -3.0, 0.0, 0.0], np.float32)
    ops = [("placeholder", "x", x, [], "float32"),
           ("call_function", "aten.any.default", np.array(True), [0], "bool")]
    return SimpleNamespace(model=helper.make_model(g), feeds={"x": x}), ops


def test_a_one_element_value_computed_from_the_inputs_is_not_held_by_a_constant():
    from drifttui.core.explain.causes.locate.causal_values import causal

    case, ops = _any_case()
    assert causal(case, ops, {0: "x", 1: "k1"}, {1: []}) == {0: "x"}
    # a value computed from the feeds that holds it as closely takes its place
    assert causal(case, ops, {0: "x", 1: "k1"}, {1: ["g"]}) == {0: "x", 1: "g"}


def _reshape_back_case():
    """x (2, 4) -> Reshape (2, 2, 2) r -> Cast c -> Reshape (2, 4) back; torch: view, type_as, reshape back."""
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Reshape", ["x", "s3"], ["r"], name="view"),
             helper.make_node("Cast", ["r"], ["c"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Reshape", ["c", "s2"], ["back"], name="back")]
    inits = [numpy_helper.from_array(np.array([2, 2, 2], np.int64), "s3"),
             numpy_helper.from_array(np.array([2, 4], np.int64), "s2")]
    g = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [2, 4])], [vi("back", TensorProto.FLOAT, [2, 4])],
                          inits)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    ops = [("placeholder", "x", x, [], "float32"),
           ("call_function", "torch.Tensor.reshape", x.reshape(2, 2, 2), [0], "float32"),
           ("call_function", "aten.type_as.default", x.reshape(2, 2, 2), [1], "float32"),
           ("call_function", "torch.Tensor.reshape", x, [2], "float32")]
    return SimpleNamespace(model=helper.make_model(g), feeds={"x": x}), ops


def test_a_call_holding_the_value_its_input_is_computed_from_moves_to_its_own_later_value():
    from drifttui.core.explain.causes.locate.causal_values import causal

    case, ops = _reshape_back_case()
    found = {0: "x", 1: "c", 2: "c", 3: "x"}
    assert causal(case, ops, found, {1: ["r"], 3: ["back"]}) == {0: "x", 1: "c", 2: "c", 3: "back"}
    assert 3 not in causal(case, ops, found, {1: ["r"]})        # no later value holds it: dropped, as before
