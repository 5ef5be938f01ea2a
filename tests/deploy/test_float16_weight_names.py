"""A float16 file whose initializers keep torch's names (ORT's float16 converter, onnxconverter-common): each weight
is torch's, rounded to float16.  Step 6's weight check compared it with the parameter to float32's closeness and
said "initializer X differs from torch X by 3e-05" for every one of them (fifty false ERROR findings on MobileBERT
through onnxconverter-common, session 35's review); a weight stored in a reduced float type that is the rounding of
torch's is the file's precision, which the budget judges.  A planted weight is still the one error."""
from __future__ import annotations

import torch
from torch import nn

from tests.deploy.precision_models import fp16_ort
from tests.models import off_identity


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 64)
        self.norm = nn.LayerNorm(64)
        self.out = nn.Linear(64, 8)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.fc(x))))


def model() -> nn.Module:
    return off_identity(Block)


def inputs() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randn(4, 32)


def _diagnose(onnx_path):
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    engine = Pipeline()
    run = engine.run(Config(model=f"{__file__}:model", inputs=f"{__file__}:inputs", onnx=str(onnx_path), samples=2))
    return run.result, engine.explain(run.result).result


def test_a_float16_files_rounded_weights_are_no_weight_errors_and_a_planted_one_is(tmp_path):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    raw = tmp_path / "raw.onnx"
    torch.onnx.export(model(), (inputs(),), str(raw), dynamo=False, opset_version=17, input_names=["x"])
    half = fp16_ort(raw, tmp_path / "fp16.onnx")
    m = onnx.load(str(half))
    assert any(t.name == "norm.weight" and t.data_type == onnx.TensorProto.FLOAT16 for t in m.graph.initializer)
    _, clean = _diagnose(half)
    assert [f.module for f in clean.findings if f.check == "weights"] == []
    for t in m.graph.initializer:                       # plant: the second Linear's bias 1.1x
        if t.name == "out.bias":
            a = numpy_helper.to_array(t)
            t.CopyFrom(numpy_helper.from_array((a * np.float16(1.1)).astype(np.float16), t.name))
    onnx.save(m, str(tmp_path / "planted.onnx"))
    result, explained = _diagnose(tmp_path / "planted.onnx")
    assert result.drift_origin is not None and result.drift_origin.module == "out"
    assert {f.module for f in explained.findings if f.check == "weights" and f.severity == "error"} == {"out"}
