"""A sequence among the origin's nodes (TorchScript's ``vstack([x, x.abs()])``: ``SequenceConstruct`` then
``ConcatFromSequence``) has a list for its value in ONNX Runtime's and the reference evaluator's runs;
``localise`` compared each node's value as an array and raised (fuzzK 36018: ``'list' object has no attribute
'dtype'``, the whole explanation lost).  A sequence is not compared node by node; the tensors around it are."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper


def _case():
    from drifttui.core.explain.causes.locate.case_data import Case

    nodes = [helper.make_node("Abs", ["x"], ["a"], name="abs"),
             helper.make_node("SequenceConstruct", ["x", "a"], ["s"], name="seq"),
             helper.make_node("ConcatFromSequence", ["s"], ["c"], name="cat", axis=0),
             helper.make_node("Mul", ["c", "c"], ["y"], name="mul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    want = np.concatenate([x, np.abs(x)]) ** 2 + 1.0     # torch's value, off the file's: a drift to localise
    return Case(model=model, feeds={"x": x}, expected={"y": want.astype(np.float32)}, module="body", call=0,
                sample=0, atol=1e-4, rtol=1e-4, nodes=[n.name for n in nodes])


def test_a_sequence_value_among_the_nodes_is_not_compared_as_an_array():
    from drifttui.core.explain.causes.locate.evaluate import localise

    loc = localise(_case())
    assert loc.kind == "export", loc.note
    assert {d["node"] for d in loc.node_diffs} == {"abs", "cat", "mul"}
