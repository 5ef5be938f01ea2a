"""The integer wrap ONNX Runtime drops (onnx/edit/lowerings/int_wrap.py, propose/edits/int_wrap.py): its always-on
RemoveDuplicateCastTransformer merges ``Cast(float -> int64) -> Cast(int64 -> int32 / int16)`` into one conversion,
which sends a value past the narrow type's range to INT_MIN (or 0) where torch keeps the low bits; the rewrite
writes the wrap out, on real ONNX Runtime against real torch; when it is proposed, and what is left alone."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.int_wrap import int_wrap_patches
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply

NARROW = {TensorProto.INT32: torch.int32, TensorProto.INT16: torch.int16, TensorProto.UINT8: torch.uint8}
VALUES = np.array([3.8716e9, -4.5291e9, 5.5975e9, 1e9, -7.0, 2.0**31, 123456.0], np.float32)


def _pair(narrow: int, first: int = TensorProto.INT64) -> onnx.ModelProto:
    nodes = [helper.make_node("Cast", ["x"], ["wide"], name="/body/Cast", to=first),
             helper.make_node("Cast", ["wide"], ["y"], name="/body/Cast_1", to=narrow)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
                              [helper.make_tensor_value_info("y", narrow, [None])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _run(model: onnx.ModelProto, feeds: dict, level: str = "ORT_DISABLE_ALL") -> np.ndarray:
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _case(model: onnx.ModelProto, feeds: dict, want: np.ndarray) -> Case:
    return Case(model, feeds, {"y": want}, "body", 0, 0, 0.0, 0.0, nodes=["/body/Cast", "/body/Cast_1"], opset=18)


@pytest.mark.parametrize("narrow", [TensorProto.INT32, TensorProto.INT16])
def test_the_written_out_wrap_is_torchs_and_the_merged_pair_is_not(narrow):
    model, feeds = _pair(narrow), {"x": VALUES}
    want = torch.from_numpy(VALUES).long().to(NARROW[narrow]).numpy()
    assert not np.array_equal(_run(model, feeds), want)         # merged even with every optimisation off
    patches = int_wrap_patches(_case(model, feeds, want))
    assert len(patches) == 1 and (patches[0].check, patches[0].kind) == ("dtype", "runtime")
    assert patches[0].spec == {"op": "rewrite", "rewrite": "int_wrap", "node": "/body/Cast_1", "wide": "int64"}
    assert "merges the Cast pair /body/Cast -> /body/Cast_1" in patches[0].why
    fixed = apply(model, patches[0])
    onnx.checker.check_model(fixed, full_check=True)
    for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_ALL"):
        assert np.array_equal(_run(fixed, feeds, level), want), level
    assert all(n.name.startswith("/body/Cast") for n in fixed.graph.node)   # kept in the Cast's scope


def test_an_unsigned_narrowing_wraps_too():
    model, feeds = _pair(TensorProto.UINT8), {"x": np.array([300.0, -1.0, 7e9, 255.0], np.float32)}
    want = torch.from_numpy(feeds["x"]).long().to(torch.uint8).numpy()
    fixed = apply(model, int_wrap_patches(_case(model, feeds, want))[0])
    assert np.array_equal(_run(fixed, feeds, "ORT_ENABLE_ALL"), want)


def test_never_proposed_where_the_wrap_changes_nothing_or_nothing_narrows():
    small = {"x": np.array([1e9, -7.0, 123456.0], np.float32)}          # inside int32: the wrap is the identity
    assert int_wrap_patches(_case(_pair(TensorProto.INT32), small, np.zeros(3, np.int32))) == []
    widening = _pair(TensorProto.INT64, first=TensorProto.INT32)        # int32 -> int64 keeps every value
    assert int_wrap_patches(_case(widening, {"x": VALUES}, np.zeros(7, np.int64))) == []


def test_a_cast_that_does_not_narrow_is_refused():
    with pytest.raises(PatchError, match="does not narrow"):
        apply(_pair(TensorProto.INT64, first=TensorProto.INT32),
              Patch({"op": "rewrite", "rewrite": "int_wrap", "node": "/body/Cast_1", "wide": "int32"}, "dtype", "", ""))


def test_the_inner_value_the_merged_pair_makes_wrong_is_found_when_read_alone():
    """A dynamo case whose outputs pass (a child module fed torch's value): fx_localise reads every inner value at
    once, which keeps the Cast pair and the wrap; read alone, the int32 value is the file's, INT_MIN."""
    from drifttui.core.explain.causes.locate.evaluate import run_ort
    from drifttui.core.explain.causes.locate.inner_values import first_failing_alone

    model, feeds = _pair(TensorProto.INT32), {"x": VALUES}
    tv = {"wide": VALUES.astype(np.int64), "y": torch.from_numpy(VALUES).long().int().numpy()}
    case = _case(model, feeds, tv["y"])
    every = run_ort(model, feeds, ["wide", "y"])                       # all read: the pair kept, the wrap right
    assert all(np.array_equal(every[k], tv[k]) for k in tv)
    assert first_failing_alone(case, tv) == "y"
    assert first_failing_alone(case, {"wide": tv["wide"]}) is None        # the int64 value is right however read
