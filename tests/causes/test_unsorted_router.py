"""An unsorted TopK whose order torch's CPU kernel chooses (session 46, forms46w's ``unsorted_route``): a router's
``softmax(...).topk(3, sorted=False)`` over 8 experts, its first slot read as the primary expert.  torch returns the
3 indices in its selection order (neither sorted nor by index), ONNX Runtime's ``TopK(sorted=0)`` in another, and
``sorted=1`` is not torch's order either: the finding says no patch exists, op-compat, naming the TopK (before:
"lowering", "no patch among 6 tried")."""
from __future__ import annotations

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.nopatch import explain_no_patch


def _file(sorted_: int) -> onnx.ModelProto:
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=-1, largest=1, sorted=sorted_)
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([node], "g", [vi("x", TensorProto.FLOAT, [6, 8])],
                              [vi("v", TensorProto.FLOAT, None), vi("i", TensorProto.INT64, None)],
                              initializer=[numpy_helper.from_array(np.asarray([3], np.int64), "k")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _case(model: onnx.ModelProto, sorted_: bool) -> Case:
    torch.manual_seed(7)
    x = torch.randn(6, 8).softmax(-1)
    v, i = torch.topk(x, 3, -1, True, sorted_)
    return Case(model, {"x": x.numpy()}, {"v": v.numpy(), "i": i.numpy()}, "body", 0, 0, 0.0, 0.0, nodes=["topk"],
                opset=17)


def test_an_unsorted_topk_in_torchs_own_order_is_said_unrepairable():
    known = explain_no_patch(_case(_file(0), False))
    assert known is not None
    check, message, _, nodes = known
    assert (check, nodes) == ("op-compat", ["topk"])
    assert "sorted=False" in message and "no patch exists" in message, message


def test_a_sorted_topk_without_ties_has_no_such_story():
    assert explain_no_patch(_case(_file(1), True)) is None
