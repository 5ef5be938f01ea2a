"""The two graph edits of session 26's mechanisms on small graphs, run by the real ONNX Runtime and the ONNX
reference implementation: a float32 graph widened to float64 (the conditioning counterfactual) computes the
float64 values, and ``zero_masked`` gives torch's zeros at the masked positions and nothing else."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.evaluate import run_ort, run_reference
from drifttui.core.onnx.edit.lowerings.masked_positions import apply_zero_masked
from drifttui.core.onnx.edit.numerics.widen import to_float64


def _layer_norm_graph():
    s, b = np.ones(32, np.float32), np.zeros(32, np.float32)
    g = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["xc"], to=TensorProto.FLOAT),
         helper.make_node("LayerNormalization", ["xc", "s", "b"], ["y"], name="ln", axis=-1, epsilon=1e-5)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 32])],
        [numpy_helper.from_array(s, "s"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_a_widened_graph_computes_the_float64_values_and_the_original_is_untouched():
    x = (np.random.default_rng(0).standard_normal((6, 32)) * 0.03 + 3000.0).astype(np.float32)
    model = _layer_norm_graph()
    x64 = x.astype(np.float64)
    exact = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    wide = run_reference(to_float64(model), {"x": x64})["y"]
    assert wide.dtype == np.float64 and np.abs(wide - exact).max() < 1e-9
    narrow = run_ort(model, {"x": x})["y"]
    assert narrow.dtype == np.float32 and np.abs(narrow - exact).max() > 1e-3     # float32 loses the variance
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT


@pytest.mark.parametrize("batch_first", [True, False])
def test_zero_masked_zeroes_the_masked_positions_only(batch_first):
    shape = [2, 3, 4] if batch_first else [3, 2, 4]
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                           helper.make_tensor_value_info("m", TensorProto.BOOL, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    apply_zero_masked(model, {"node": "act", "mask": "m", "batch_first": batch_first})
    x = np.abs(np.random.default_rng(1).standard_normal(shape)).astype(np.float32) + 0.1
    m = np.array([[False, False, True], [False, True, False]])
    y = run_ort(model, {"x": x, "m": m})["y"]
    pos = y if batch_first else y.transpose(1, 0, 2)
    xs = x if batch_first else x.transpose(1, 0, 2)
    assert (pos[m] == 0).all() and np.array_equal(pos[~m], xs[~m])


def test_zero_masked_refuses_a_mask_the_graph_does_not_hold():
    model = _layer_norm_graph()
    with pytest.raises(ValueError, match="padding mask"):
        apply_zero_masked(model, {"node": "ln", "mask": "nowhere"})


@pytest.fixture(scope="module")
def cdist_dynamo(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "forms40f")("cdist_mm_shallow", "dynamo")


def test_a_file_with_float32_folded_constants_is_compared_through_its_float64_export(cdist_dynamo):
    """``torch.cdist`` on its matrix-product route, dynamo file: the exporter folded the prototype side into a
    float32 initializer, so the file widened to float64 keeps that rounding and stays over the tolerance from torch's
    float64; the module exported in float64 by the same exporter (the same lowering) agrees with it: ``stability``,
    verified, and torch's own float32 over the tolerance (nothing to repair)."""
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.explain.causes.locate.case import call_io
    from drifttui.core.onnx.graph import full_model
    from drifttui.core.explain.causes.locate.evaluate import float64_values
    from drifttui.core.explain.causes.propose.numerics.conditioning import _torch64

    engine, _, _, result, exp = cdist_dynamo
    ctx, case = engine.context(result), exp.case
    ins, outs = call_io(ctx, case)
    t64 = _torch64(ctx.modules()[case.module], ins)[0]
    bound = case.atol + case.rtol * float(np.abs(t64).max())
    widened = next(iter(float64_values(case).values()))
    assert np.abs(widened - t64).max() > bound                   # the folded float32 constants alone are over it
    assert np.abs(outs[0].astype(np.float64) - t64).max() > bound   # torch's own float32 too: ill-conditioned
    head = exp.findings[0]
    assert (head.check, head.verified, head.patch["op"]) == ("stability", True, "float64"), head.message
    assert head.patch["float64_export"] is True and head.patch["float64_error"] <= bound
    assert "exported in float64 by the file's exporter" in head.message and head.torch_op == "torch.cdist"
    fixed, what, _ = repair_patches(full_model(ctx.index), result, exp)     # repair says why it writes nothing
    assert fixed.model is None and "float64 counterfactual" in what and "re-export" not in what, what
