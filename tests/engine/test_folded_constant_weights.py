"""A weight the exporter folded out of the model: ``self.bias * self.scale`` (Funnel's attention biases) becomes
one initializer, no parameter of the model but a function of one, in the same direction.  The reduced-precision
weight check (prepare/qweight_check.py) compared ORT's float16 copy of it with the parameter: every element "more
than one rounding step off", a weight "not the model's", a false genuine DRIFT at a layer within its budget
(Funnel through ORT's float16 converter).  A rounding of a constant the model computes from its parameters alone
(prepare/folded_constants.py) is the model's; the folded constant x1.05 is still a wrong weight, named there."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from torch import nn

from drifttui.core.pipeline import run_once
from drifttui.core.prepare.folded_constants import folded_constants
from drifttui.core.result import Config

SPEC = f"{__file__}:scaled"
INPUTS = "shape:2x5x16"


class ScaledBias(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.r_bias = nn.Parameter(torch.randn(5, 16))    # 2-D, as Funnel's (heads, head size)
        self.scale = 1.0 / 16 ** 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(x) * self.scale + self.r_bias * self.scale)


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = ScaledBias()
        self.out = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.attn(x))


def scaled() -> nn.Module:
    torch.manual_seed(0)
    return Scaled().eval()


@pytest.fixture(scope="module")
def fp16(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    folder = tmp_path_factory.mktemp("scaled")
    raw = folder / "raw.onnx"
    torch.onnx.export(scaled(), (torch.randn(2, 5, 16),), str(raw), dynamo=True, external_data=False)
    path = folder / "fp16.onnx"
    onnx.save(convert_float_to_float16(onnx.load(str(raw)), keep_io_types=True), str(path))
    return path


def _folded(model: onnx.ModelProto) -> onnx.TensorProto:
    want = (scaled().attn.r_bias.detach().numpy() / 4).astype(np.float16)
    found = [i for i in model.graph.initializer if numpy_helper.to_array(i).shape == want.shape
             and np.allclose(numpy_helper.to_array(i).astype(np.float32), want, atol=1e-3)]
    assert len(found) == 1, [i.name for i in model.graph.initializer]     # the premise: the exporter folded it
    return found[0]


def test_the_model_computes_the_folded_constant():
    want = scaled().attn.r_bias.detach().numpy() / 4
    consts = folded_constants(scaled(), ((torch.randn(2, 5, 16),), {}), {want.size, 2 * 5 * 16})
    assert any(t.shape == want.shape and np.allclose(t, want) for _, t in consts), [t.shape for _, t in consts]
    assert not any(t.shape == (2, 5, 16) for _, t in consts)      # nothing that depends on the input


def test_a_folded_weight_in_float16_is_the_models(fp16: Path):
    _folded(onnx.load(str(fp16)))
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(fp16), samples=2)).result
    assert r.verdict == "ok", (r.drift_origin, [L.note for L in r.layers if L.status == "drift"])
    assert r.precision.verdict == "within budget"


def test_a_folded_weight_x105_is_named(fp16: Path, tmp_path: Path):
    model = onnx.load(str(fp16))
    init = _folded(model)
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float16(1.05), init.name))
    bad = tmp_path / "bad.onnx"
    onnx.save(model, str(bad))
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(bad), samples=2)).result
    assert r.verdict == "drift" and r.drift_origin.module == "attn", r.drift_origin


def test_a_float16_fold_a_few_roundings_off_is_the_models_an_int8_one_is_not():
    """The dynamo exporter's optimizer folds ``F.normalize(codebook)`` of a float16 parameter in float16 itself
    (ONNX's reference implementation: the squares summed in float16), a unit or two in the last place from torch's
    value: still the model's constant (held-out batch X, session 37: a clean control called a wrong weight).  An
    int8 weight keeps the one-step rule."""
    from drifttui.core.onnx.qweights import QWeight
    from drifttui.core.prepare.qweight_check import FOLD_ULPS, _a_folded_constant

    torch_value = np.linspace(0.1, 0.9, 32, dtype=np.float32).reshape(4, 8)
    step = np.abs(torch_value) * 2.0 ** -10
    folded = [("codebook", torch_value)]
    near = QWeight("t", 0, "", torch_value + 2 * step, step)
    assert _a_folded_constant(near, folded)
    assert not _a_folded_constant(QWeight("t", 0, "", torch_value + (FOLD_ULPS + 1) * step, step), folded)
    q = QWeight("w", 0, "w_scale", torch_value + 2 * step, step, zero=np.zeros_like(step), scale_of=step)
    assert not _a_folded_constant(q, folded)
