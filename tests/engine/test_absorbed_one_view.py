"""Two modules whose absorbed outputs are views of one ONNX value (timm's Swin: a window partition and
its neighbour) got a round trip each: the file defined ``<v>::absorbed`` twice and ONNX Runtime refused
it ("Duplicate definition of name"), an exit 3 on a file ORT runs.  One view per value, the closest."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from drifttui.core.onnx.edit.absorbed_views import with_views
from drifttui.core.prepare.plan.absorbed import choose


@dataclass
class _View:
    call: int
    value: str
    perm: tuple
    shape: tuple
    readers: tuple
    depth: int
    module: str = ""
    back_depth: int = -1

    def of(self, arr):
        return np.transpose(arr, self.perm)


def _model() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="/a/Relu"),
             helper.make_node("MatMul", ["r", "w"], ["y"], name="/b/MatMul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor("w", TensorProto.FLOAT, [3, 2], [1.0] * 6)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_two_calls_that_claim_one_value_get_one_view_the_closest():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    far, near = _View(1, "r", (1, 0), (3, 2), (1,), 1), _View(2, "r", (1, 0), (3, 2), (1,), 1)
    off = x.T.copy()
    off[0, 0] += 100.0                      # one element of six apart: a candidate, but farther
    torch_out = {1: off, 2: x.T}
    chosen = choose({1: [far], 2: [near]}, lambda calls: {c: torch_out[c] for c in calls}, lambda names: {"r": x})
    assert chosen == [near]


def test_the_round_trips_never_define_a_name_twice():
    v = _View(1, "r", (1, 0), (3, 2), (1,), 1)
    model = with_views(_model(), [v, _View(2, "r", (1, 0), (3, 2), (1,), 1)], {"r": (2, 3)})
    outs = [o for n in model.graph.node for o in n.output]
    assert len(outs) == len(set(outs))
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((2, 3), np.float32)})[0]
    np.testing.assert_allclose(got, np.full((2, 2), 3.0))
