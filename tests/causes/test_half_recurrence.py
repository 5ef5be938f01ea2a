"""A float16 recurrent node computed as torch's CPU cell computes it (``propose/numerics/half_recurrence.py``,
``onnx/edit/numerics/half_recurrence.py``; batch 41D): ONNX Runtime has no float16 LSTM / GRU / RNN kernel and keeps
the state in float32 over every step, where torch rounds each op of each step to float16; with a long memory (a gate
held near 1 by its bias) the file drifts from torch, and the node rewritten with torch's roundings does not."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.numerics.half_recurrence import half_recurrence_patches
from drifttui.core.onnx.edit.patches import Patch, apply
from tests.causes.exported_case import exported_case


class Memory(nn.Module):
    def __init__(self, kind: str, bidirectional: bool) -> None:
        super().__init__()
        self.rnn = getattr(nn, kind)(8, 16, batch_first=True, bidirectional=bidirectional)
        with torch.no_grad():
            for name, p in self.rnn.named_parameters():
                if name.startswith("bias_ih"):
                    p[16:32] += 6.0         # LSTM: the forget gate; GRU: the update gate
        self.rnn.half()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


def _export(module: nn.Module, x: torch.Tensor, exporter: str, tmp_path) -> onnx.ModelProto:
    with torch.no_grad():
        return exported_case(module, x, exporter, tmp_path)[0]


def _run(model: onnx.ModelProto, x: torch.Tensor) -> np.ndarray:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0].astype(np.float32)


@pytest.mark.parametrize("kind,bidirectional,exporter", [("GRU", True, "torchscript"), ("LSTM", False, "torchscript")])
def test_the_node_with_torch_roundings_computes_torch_float16_recurrence(tmp_path, kind, bidirectional, exporter):
    torch.manual_seed(0)
    module, x = Memory(kind, bidirectional).eval(), torch.randn(2, 150, 8).half()
    want = module(x).detach().float().numpy()
    model = _export(module, x, exporter, tmp_path)
    tol = 4 * np.finfo(np.float16).eps * np.abs(want).max()
    assert np.abs(_run(model, x) - want).max() > tol          # the float32 state drifts past float16's tolerance
    case = Case(model, {model.graph.input[0].name: x.numpy()}, {model.graph.output[0].name: want}, "rnn", 0, 0,
                1e-5, 1e-5, nodes=[n.name for n in model.graph.node])
    patches = half_recurrence_patches(case)
    assert [p.spec["rewrite"] for p in patches] == ["half_recurrence"] and patches[0].check == "dtype"
    assert np.abs(_run(apply(model, patches[0]), x) - want).max() <= tol


def test_a_float32_recurrence_is_not_proposed(tmp_path):
    module, x = Memory("GRU", False).float().eval(), torch.randn(1, 5, 8)
    model = _export(module, x, "torchscript", tmp_path)
    case = Case(model, {model.graph.input[0].name: x.numpy()}, {}, "rnn", 0, 0, 1e-5, 1e-5,
                nodes=[n.name for n in model.graph.node])
    assert half_recurrence_patches(case) == []
    with pytest.raises(Exception):
        apply(model, Patch({"op": "rewrite", "rewrite": "half_recurrence",
                            "node": next(n.name for n in model.graph.node if n.op_type == "GRU")}, "dtype", "", ""))
