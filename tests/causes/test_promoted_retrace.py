"""The make_fx re-trace (``model/retrace.py``) computes an elementwise op on integer inputs in the float type torch's
type promotion gives it, so the exporter's lowering for integer inputs is never reached.

The fuzzer's source-derived pool, seed 25073 (dynamo): ``aten.angle`` of an int64 tensor is float32 in torch (pi
where the input is negative); torchlib lowers it as ``Where(x < 0, pi, 0)`` with pi cast to the input's type, 3 in
int64, and the file's output is int64.  No other route lowered it otherwise (the TorchScript exporter refuses
``angle``, torch decomposes it nowhere), so the finding stayed unverified.
"""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

from drifttui.core.model.retrace import retrace


class Angle(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.angle.default((x * 100).long()) + torch.sin(x)


def test_an_integer_input_torch_promotes_is_cast_before_the_op(tmp_path):
    x = torch.randn(6, 32)
    gm = retrace(Angle(), (x,))
    [angle] = [n for n in gm.graph.nodes if n.target is torch.ops.aten.angle.default]
    assert angle.all_input_nodes[0].meta["val"].dtype == torch.float32       # the int64 input cast first
    [sin] = [n for n in gm.graph.nodes if n.target is torch.ops.aten.sin.default]
    assert sin.all_input_nodes[0].op == "placeholder"                        # a float input: the op as it was
    assert torch.equal(gm(x), Angle()(x))
    path = tmp_path / "angle.onnx"
    torch.onnx.export(gm, (x,), str(path), dynamo=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    assert np.abs(got - Angle()(x).numpy()).max() < 1e-6
