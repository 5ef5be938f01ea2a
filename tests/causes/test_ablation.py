"""Issue 30 point 4: a catalogue patch that converts the file to a newer opset *and* edits an attribute
is labelled by what removed the drift.  When the conversion alone removes it, the finding says so
(and repair applies the conversion alone); when the attribute edit is needed, the story stands.
Real onnx version converter, real ONNX Runtime."""
from __future__ import annotations

import numpy as np


def _opset10_case(scale: float, antialias: bool):
    """An opset-10 linear Resize (always asymmetric) by ``scale`` whose torch-side value is the
    opset-18 Resize (half_pixel) with or without antialias; the catalogue's story: antialias."""
    import onnx
    from onnx import TensorProto, helper

    from drifttui.core.explain.causes.locate.case import Case
    from drifttui.core.onnx.edit.patches import Patch, apply

    g = helper.make_graph([helper.make_node("Resize", ["x", "s"], ["y"], name="/body/Resize", mode="linear")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [onnx.numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "s")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)])
    x = np.random.default_rng(0).standard_normal((1, 1, 8, 8)).astype(np.float32)
    spec = {"op": "rewrite", "node": "/body/Resize", "rewrite": "resize_antialias"}
    torch_like = spec if antialias else {**spec, "rewrite": "convert_opset", "opset": 18}
    truth = _run(apply(model, Patch(torch_like, "interpolation", "", "")), x)
    case = Case(model, {"x": x}, {"y": truth}, "body", 0, 0, 1e-5, 1e-5, nodes=["/body/Resize"], opset=10)
    return case, Patch(spec, "interpolation", "Resize /body/Resize does not antialias", "", module="body",
                       nodes=["/body/Resize"])


def _run(model, x):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _explained(scale: float, antialias: bool):
    from drifttui.core.explain.causes.propose.ablation import by_what_it_changed
    from drifttui.core.explain.causes.verify import verify

    case, story = _opset10_case(scale, antialias)
    trials = verify(case, [story])
    assert trials[0].after.ok and not trials[0].after.fails     # the catalogue patch verifies
    return case, by_what_it_changed(case, trials, lambda ps: verify(case, ps))


def test_a_patch_whose_conversion_alone_removes_the_drift_is_labelled_by_the_conversion():
    from drifttui.core.onnx.edit.patches import apply

    # an upsample: antialias changes nothing, the antialias patch verifies by its conversion to opset 18
    case, trials = _explained(2.0, antialias=False)
    head = trials[0]
    assert head.patch.spec == {"op": "rewrite", "node": "/body/Resize", "rewrite": "convert_opset", "opset": 18}
    assert head.after.ok and not head.after.fails
    assert "alone removes the drift" in head.patch.why and "resize_antialias" in head.patch.why
    assert head.patch.check == "interpolation"
    fixed = apply(case.model, head.patch)
    assert next(o.version for o in fixed.opset_import if o.domain in ("", "ai.onnx")) == 18


def test_a_patch_whose_attribute_edit_is_needed_keeps_its_story():
    # a downsample torch antialiases: the conversion alone does not remove the drift
    _, trials = _explained(0.5, antialias=True)
    assert [t.patch.spec["rewrite"] for t in trials] == ["resize_antialias"]
