"""The exact integer power (onnx/edit/lowerings/int_pow.py, propose/edits/int_pow.py): ONNX Runtime's integer Pow computes through
double and loses the low digits past 2**53; the rewrite multiplies integers as torch does, on real ONNX Runtime
against real torch; when it is proposed, and that a float Pow or an exact one is left alone."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.int_pow import exact_power, int_pow_patches
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply


def _pow(elem: int = TensorProto.INT64, opset: int = 18) -> onnx.ModelProto:
    vi = [helper.make_tensor_value_info(n, elem, [None]) for n in ("b", "e")]
    graph = helper.make_graph([helper.make_node("Pow", ["b", "e"], ["y"], name="/body/Pow")], "g", vi,
                              [helper.make_tensor_value_info("y", elem, [None])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


BASES = np.array([7, 7, 1000, -3, 2, 0, 5, 31], np.int64)
EXPONENTS = np.array([22, 19, 6, 39, 63, 0, 70, 12], np.int64)


@pytest.mark.parametrize("opset", [13, 18])
def test_the_power_by_repeated_squaring_is_torchs_and_the_kernel_is_not(opset):
    model, feeds = _pow(opset=opset), {"b": BASES, "e": EXPONENTS}
    want = torch.pow(torch.from_numpy(BASES), torch.from_numpy(EXPONENTS)).numpy()   # wraps past int64, as numpy
    assert np.array_equal(exact_power(BASES, EXPONENTS), want)
    case = Case(model, feeds, {"y": want}, "body", 0, 0, 0.0, 0.0, nodes=["/body/Pow"], opset=opset)
    patches = int_pow_patches(case)
    assert len(patches) == 1 and (patches[0].check, patches[0].kind) == ("dtype", "runtime")
    assert patches[0].spec["bits"] >= 8 and "through double" in patches[0].why       # 70 needs 7 bits
    fixed = apply(model, patches[0])
    onnx.checker.check_model(fixed, full_check=True)
    assert not np.array_equal(_run(model, feeds), want) and np.array_equal(_run(fixed, feeds), want)
    assert all(n.name.startswith("/body/Pow_drifttui_ipow") for n in fixed.graph.node)   # kept in the Pow's scope


def test_never_proposed_where_the_kernel_is_exact_or_the_power_is_a_float():
    small = {"b": np.array([7, 3, 1000], np.int64), "e": np.array([18, 30, 5], np.int64)}     # all under 2**53
    assert int_pow_patches(Case(_pow(), small, {}, "body", 0, 0, 0.0, 0.0)) == []
    floats = {k: v.astype(np.float32) for k, v in small.items()}
    assert int_pow_patches(Case(_pow(TensorProto.FLOAT), floats, {}, "body", 0, 0, 0.0, 0.0)) == []


def test_a_float_pow_is_refused():
    model = _pow(TensorProto.FLOAT)
    with pytest.raises(PatchError, match="not an int32/int64"):
        apply(model, Patch({"op": "rewrite", "rewrite": "int_pow_exact", "node": "/body/Pow", "dtype": "float32"},
                           "dtype", "", ""))


@pytest.mark.parametrize("opset", [13, 18])
def test_negative_exponents_of_a_tensor_are_torchs_powi_not_a_reason_to_skip(opset):
    """The fuzzer's source-derived pool, seed 29012 (both exporters): ``pow((x * 100).long(), (x * 100).long())``.
    Half the exponents are negative (torch: 1 for a base of 1, -1 or 1 by parity for -1, else 0) and the others wrap;
    the patch was never proposed, since a negative exponent was taken for one torch refuses."""
    bases = np.array([7, 31, 1, -1, -1, 0, 5, -3, 2, 1000], np.int64)
    exps = np.array([22, 12, -5, -3, -4, -2, -1, 39, 63, -7], np.int64)
    want = torch.pow(torch.from_numpy(bases), torch.from_numpy(exps)).numpy()
    assert np.array_equal(exact_power(bases, exps), want)
    model, feeds = _pow(opset=opset), {"b": bases, "e": exps}
    case = Case(model, feeds, {"y": want}, "body", 0, 0, 0.0, 0.0, nodes=["/body/Pow"], opset=opset)
    patches = int_pow_patches(case)
    assert len(patches) == 1 and patches[0].spec.get("negative") is True
    fixed = apply(model, patches[0])
    onnx.checker.check_model(fixed, full_check=True)
    assert not np.array_equal(_run(model, feeds), want) and np.array_equal(_run(fixed, feeds), want)
