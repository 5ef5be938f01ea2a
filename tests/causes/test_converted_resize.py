"""repair applies what diagnose verified whatever the version converter renamed: onnx's converter
turns an opset-9 Upsample into a Resize with no name and a new output value in the whole file, so the
converted node is found by name, else by output, else by its position among the Resize nodes."""
from __future__ import annotations

import numpy as np


def _opset9_file(n_up: int = 1):
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["v0"], name="/stem/Relu")]
    for k in range(n_up):
        nodes.append(helper.make_node("Upsample", [f"v{k}", "s"], [f"v{k + 1}"], name=f"/body{k}/Upsample",
                                      mode="linear"))
    nodes.append(helper.make_node("Relu", [f"v{n_up}"], ["y"], name="/head/Relu"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])


def _run(model, x):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_the_opset_11_rewrite_finds_the_resize_the_converter_renamed():
    from drifttui.core.onnx.edit.patches import Patch, apply

    model = _opset9_file(n_up=2)
    spec = {"op": "rewrite", "node": "/body1/Upsample", "rewrite": "resize_opset11", "mode": "half_pixel"}
    fixed = apply(model, Patch(spec, "interpolation", "", ""))
    resizes = [n for n in fixed.graph.node if n.op_type == "Resize"]
    modes = [next((a.s for a in n.attribute if a.name == "coordinate_transformation_mode"), b"") for n in resizes]
    assert len(resizes) == 2 and modes[1] == b"half_pixel" and modes[0] != b"half_pixel"
    x = np.abs(np.random.default_rng(0).standard_normal((1, 1, 3, 3))).astype(np.float32)
    got = _run(fixed, x)
    assert got.shape == (1, 1, 12, 12) and np.isfinite(got).all()


def _value(model, name, x):
    """``model`` with ``name`` as its output, run on ``x``."""
    import copy

    from onnx import helper

    m = copy.deepcopy(model)
    del m.graph.output[:]
    m.graph.output.append(helper.make_empty_tensor_value_info(name))
    return _run(m, x)


def test_the_resize_the_patch_is_not_about_computes_as_it_did_before_the_conversion():
    """The converter moves every opset-9/10 Resize and Upsample to opset 11 without a
    coordinate_transformation_mode, and opset 11's default (half_pixel) is not the asymmetric sampling they did:
    the rewrite of one node would silently change the others (a linear one samples half a pixel off).  Each other
    node keeps its sampling: its value in the patched file equals the original's."""
    from drifttui.core.onnx.edit.patches import Patch, apply

    model = _opset9_file(n_up=2)
    spec = {"op": "rewrite", "node": "/body1/Upsample", "rewrite": "resize_opset11", "mode": "half_pixel"}
    fixed = apply(model, Patch(spec, "interpolation", "", ""))
    x = np.random.default_rng(1).standard_normal((1, 1, 3, 3)).astype(np.float32)
    first = next(n for n in fixed.graph.node if n.op_type == "Resize").output[0]     # the converter renamed v1
    np.testing.assert_array_equal(_value(fixed, first, x), _value(model, "v1", x))
    assert not np.allclose(_run(fixed, x), _run(model, x))          # the patched node did change
