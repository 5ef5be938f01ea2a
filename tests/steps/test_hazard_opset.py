"""Step 3's hazard line (issue 35 item 5): an opset-10 Resize has no coordinate_transformation_mode
to quote; it is always asymmetric."""
from drifttui.core.explain.steps.node import hazard
from drifttui.core.result import NodeInfo


def test_an_old_resize_is_said_always_asymmetric_not_half_pixel():
    node = NodeInfo("up", "Resize", "", {"mode": "linear"}, ["x", "scales"], ["y"])
    old = hazard(node, {}, 10)
    assert "coordinate_transformation_mode=" not in old and "always asymmetric" in old and "opset-10" in old
    new = hazard(node, {}, 13)
    assert "coordinate_transformation_mode=half_pixel" in new          # the opset-11+ default, quoted
    assert "always asymmetric" in hazard(NodeInfo("up", "Upsample", "", {}, ["x"], ["y"]), {}, 9)


def test_an_integer_div_is_a_hazard_only_where_its_truncation_can_differ_from_floor():
    """Step 3 flags an integer Div by the same rule as the dtype check (onnx/intdiv.py): a split size
    ``Shape[-1] / 4`` is never negative and is not a hazard; a Div of a signed input still is."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from drifttui.core.onnx.graph import build_index

    g = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "last"], ["d"]),
         helper.make_node("Div", ["d", "four"], ["size"], name="size_div"),
         helper.make_node("Div", ["a", "four"], ["q"], name="signed_div"),
         helper.make_node("Concat", ["size", "q"], ["out"], axis=0)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
              helper.make_tensor_value_info("a", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("out", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("four", 4), ("last", [-1]))])
    index = build_index(helper.make_model(g))
    types = {"d": TensorProto.INT64, "four": TensorProto.INT64, "a": TensorProto.INT64}
    size = NodeInfo("size_div", "Div", "", {}, ["d", "four"], ["size"])
    signed = NodeInfo("signed_div", "Div", "", {}, ["a", "four"], ["q"])
    assert hazard(size, types, 17, index) is None
    assert "truncates towards zero" in hazard(signed, types, 17, index)
    assert "truncates towards zero" in hazard(size, types, 17)          # no graph to read: said, as before
