"""The narrowing direction of the cast-first counterfactual (``round_first``, ``onnx/edit/numerics/cast_first.py``,
``propose/numerics/cast_first.narrowing_patches``), on a bare graph as both exporters write
``torch.special.log_softmax(x, -1, dtype=torch.float16)`` of a float32 ``x``: ``Cast(LogSoftmax(x), to=float16)``.
torch casts the input to float16 first; the file computes the op on the unrounded input and rounds once (the
fuzzer's source-derived pool, seed 23051: off by half a float16 step at x100, unverified: no patch rounded first)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.numerics.cast_first import narrowing_patches
from drifttui.core.onnx.edit.patches import apply


def _file(readers: int = 1) -> onnx.ModelProto:
    nodes = [helper.make_node("LogSoftmax", ["x"], ["l"], name="log_softmax", axis=-1),
             helper.make_node("Cast", ["l"], ["h"], name="narrow", to=10),
             helper.make_node("Cast", ["h"], ["y"], name="widen", to=1)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 32])]
    if readers > 1:         # the op's float32 result is read as such too: no dtype= story
        nodes.append(helper.make_node("Neg", ["l"], ["z"], name="neg"))
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [6, 32]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])], outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]


def _case(model: onnx.ModelProto) -> tuple[Case, np.ndarray]:
    torch.manual_seed(0)
    x = torch.randn(6, 32) * 300.0
    want = torch.special.log_softmax(x, -1, dtype=torch.float16).float().numpy()
    nodes = [n.name for n in model.graph.node]
    return Case(model, {"x": x.numpy()}, {"y": want}, "body", 0, 0, 1e-4, 1e-4, nodes=nodes, opset=17), want


def test_the_input_rounded_first_computes_what_torch_computes():
    case, want = _case(_file())
    assert np.abs(_run(case.model, case.feeds["x"]) - want).max() >= 0.25       # the file as exported
    patches = narrowing_patches(case)
    assert [p.spec["rewrite"] for p in patches] == ["round_first"]
    assert (patches[0].check, patches[0].kind) == ("dtype", "export")
    assert patches[0].spec["inputs"] == ["x"] and patches[0].spec["about"] == "log_softmax"
    assert "torch casts the input to float16 before the op" in patches[0].why
    fixed = apply(case.model, patches[0])
    onnx.checker.check_model(fixed, full_check=True)
    assert np.abs(_run(fixed, case.feeds["x"]) - want).max() == 0.0


def test_no_patch_where_the_wide_result_is_read_too_or_the_cast_widens():
    case, _ = _case(_file(readers=2))
    assert narrowing_patches(case) == []
    widening = _file()
    widening.graph.node[1].attribute[0].i = 11          # a Cast to float64: nothing torch rounded first
    widening.graph.node[2].attribute[0].i = 1
    case, _ = _case(widening)
    assert narrowing_patches(case) == []
