"""An opmath ``per_op`` patch judged at the float16 rounding budget (``spec["rtol"]``) passes there only where it
removed at least ``spec["gain"]`` times what it leaves (``locate/evaluate.judged_error``): a float16 FRN whose
``pow`` overflows in torch leaves, once the dropped rounding is put back, one float16 ulp from torch's fused
``rsqrt`` against the file's ``Div(1, Sqrt)`` (forms48d's ``half_frn``); a patch that leaves most of the error is
not that."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case_data import Case
from drifttui.core.explain.causes.locate.evaluate import judged_error


def _scaled(k: float):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    node = helper.make_node("Mul", ["x", "k"], ["y"])
    graph = helper.make_graph([node], "g", [x], [y], [helper.make_tensor("k", TensorProto.FLOAT, [], [k])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _case(k: float, expected: np.ndarray) -> Case:
    x = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    return Case(_scaled(k), {"x": x}, {"y": expected.astype(np.float32)}, "body", 0, 0, 1e-4, 1e-4)


WANT = np.array([2.0, -4.0, 6.0, 1.0]) * (1 + 2.0 ** -11)        # torch's: half an ulp of float16 off 2x
PATCH = SimpleNamespace(spec={"rtol": 4 * 2.0 ** -10, "gain": 16.0})


def test_a_rounding_patch_that_removed_the_error_passes_at_the_rounding_budget():
    ev = judged_error(_case(3.0, WANT), PATCH, _scaled(2.0))        # the file: 3x; the patch: 2x
    assert ev.ok and not ev.fails, ev


def test_a_rounding_patch_that_leaves_most_of_the_error_fails():
    near = WANT * (1 + 2.0 ** -9)                                       # the file already that close
    case = _case(2.0, near)
    case.model = _scaled(2.0 * (1 + 2.0 ** -10))
    ev = judged_error(case, PATCH, _scaled(2.0))
    assert ev.fails and "times below" in ev.error, ev


def test_without_a_gain_the_budget_alone_judges():
    ev = judged_error(_case(3.0, WANT), SimpleNamespace(spec={}), _scaled(2.0))
    assert ev.fails, ev                                                # float32's tolerance: half an ulp is over it
