"""A TopK whose indices nothing reads tells no tie story (``propose/nopatch.py``; session 48, forms48c).

A sort-based sparsemax (``torch.sort`` then ``cumsum`` of the sorted values) exports a TopK whose indices output
nothing reads: ties in its input (a float16 sparsemax ties in every row) leave its values the same in any order, so
"TopK selects among tied values ... no patch exists" would head a drift it cannot cause (and keep the float64
counterfactual from being tried).  A TopK whose indices are read keeps the story."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.nopatch import explain_no_patch


def _file(read_indices: bool) -> onnx.ModelProto:
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=-1, largest=1),
             helper.make_node("CumSum", ["v", "axis"], ["c"], name="cumsum")]
    outputs = [vi("c", TensorProto.FLOAT, None)]
    if read_indices:
        nodes.append(helper.make_node("Cast", ["i"], ["fi"], name="cast", to=TensorProto.FLOAT))
        outputs.append(vi("fi", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [6, 8])], outputs,
                              initializer=[numpy_helper.from_array(np.asarray([8], np.int64), "k"),
                                           numpy_helper.from_array(np.asarray(-1, np.int64), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _case(model: onnx.ModelProto) -> Case:
    x = np.round(np.random.default_rng(7).normal(size=(6, 8)) * 2).astype(np.float32)   # ties in every row
    return Case(model, {"x": x}, {}, "body", 0, 0, 0.0, 0.0, nodes=["topk", "cumsum"], opset=17)


def test_a_sort_whose_indices_nothing_reads_has_no_tie_story():
    assert explain_no_patch(_case(_file(False))) is None


def test_a_topk_whose_indices_are_read_keeps_its_tie_story():
    known = explain_no_patch(_case(_file(True)))
    assert known is not None and known[0] == "op-compat" and "tied values" in known[1], known
