"""A keep-in-float32 copy of a float16 file whose scalars are ``Constant`` nodes (the TorchScript exporter writes
``h * 0.5 + 1e-6`` of a float16 ``h`` so; the dynamo exporter writes initializers): a kept Constant holds its
value in float32, so the copy is a graph ONNX Runtime loads.  Before, the Constant's output was renamed to its
float32 value and its tensor stayed float16: ``Add`` bound to float and float16, and ``repair`` of a TorchScript
float16 file over its budget stopped at the first keep-list copy (exit 3; session 32's held-out batch K,
``half_rmsnorm`` / ``padded_half_attention``)."""
from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import nn

SPEC = __file__


class HalfScaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).half()
        return (h * 0.5 + 1e-3).float() + x


def build() -> nn.Module:
    torch.manual_seed(0)
    return HalfScaled().eval()


def rows() -> torch.Tensor:
    return torch.randn(4, 8)


def test_a_kept_float16_constant_node_holds_its_value_in_float32(tmp_path):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    from drifttui.core.onnx.edit.keep.float32 import keep_float32, without_views
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    path = tmp_path / "half.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(build(), (rows(),), str(path), dynamo=False)
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in onnx.load(str(path)).graph.node
              if n.op_type == "Constant" and n.attribute[0].t.data_type == onnx.TensorProto.FLOAT16}
    assert consts, "the TorchScript file writes its float16 scalars as Constant nodes"
    pr = prepare(Config(model=f"{SPEC}:build", onnx=str(path), inputs=f"{SPEC}:rows", samples=2))
    low = {k for k, n in enumerate(pr.index.nodes)           # every node that writes a float16 value
           if any(pr.index.elem_types.get(o) == onnx.TensorProto.FLOAT16 for o in n.outputs)}
    kept = without_views(keep_float32(pr.proto, pr.index, low, {}))
    widened = [n for n in kept.graph.node if n.op_type == "Constant" and n.output[0].endswith("::float32")]
    assert widened, "a float16 Constant is among the kept nodes"
    for n in widened:          # its value in float32, the float16 number it held
        assert n.attribute[0].t.data_type == onnx.TensorProto.FLOAT, n.name
        value = numpy_helper.to_array(n.attribute[0].t)
        assert np.array_equal(value, consts[n.output[0][: -len("::float32")]].astype(np.float32))
    x = rows()
    sess = ort.InferenceSession(kept.SerializeToString(), providers=["CPUExecutionProvider"])    # loads
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    with torch.no_grad():        # every float16 node kept: the float32 function of the float16 constants, its
        m = build()              # value rounded once where the float32 Cast outside the set reads it
        c = torch.tensor(1e-3).half().float()
        want = (m.lin(x) * 0.5 + c).half().float() + x
    assert np.abs(got - want.numpy()).max() < 1e-5
