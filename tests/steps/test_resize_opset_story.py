"""An opset story only where the attribute exists at that opset (issue 30 point 4): a Resize of opset 10 has no
``coordinate_transformation_mode``, so the warning on a linear Resize outside an interpolate module says what
that opset does (always asymmetric) and the opset fix, never an attribute value the file cannot hold."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.checks import interpolation
from drifttui.core.onnx.graph import build_index


def _resize_file(opset: int, attrs: dict) -> object:
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    ins = ["x", "scales"] if opset < 11 else ["x", "", "scales"]
    g = helper.make_graph([helper.make_node("Resize", ins, ["y"], name="/up/Resize", **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6])], [scales])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _warnings(proto) -> list:
    ctx = SimpleNamespace(index=build_index(proto), calls=[], modules=lambda: {}, node_module=lambda ni: "up")
    return [f for f in interpolation.check(ctx) if f.severity == "warning"]


def test_an_opset_10_linear_resize_is_told_by_its_opset_not_by_an_attribute_it_cannot_have():
    found = _warnings(_resize_file(10, {"mode": "linear"}))
    assert len(found) == 1, found
    f = found[0]
    assert "coordinate_transformation_mode" not in f.message, f.message
    assert "opset-10 Resize is always asymmetric" in f.message and "opset >= 11" in f.fix, (f.message, f.fix)


def test_an_opset_11_asymmetric_linear_resize_still_names_the_attribute():
    found = _warnings(_resize_file(11, {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}))
    assert len(found) == 1 and "coordinate_transformation_mode=asymmetric" in found[0].message, found
    assert not _warnings(_resize_file(11, {"mode": "linear"}))       # half_pixel: what F.interpolate does
