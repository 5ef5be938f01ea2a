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
