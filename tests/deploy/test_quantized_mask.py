"""A quantized causal mask is read back at float32's extreme, not as an overflow to inf (found on a
GPT-2 dynamo file, quantize_static QOperator: the mask's ``finfo.min`` quantizes with a scale near 1e36,
and ``(q - zero point) * scale`` in float32 overflowed to -inf in the weight scan and in the float32
weights of the precision repair: a value no tensor of the model holds, so the mask matched no torch
tensor).  The model is built here, seeded: an embedding, one causal attention whose mask is a buffer of
``finfo.min`` added to the scores, a head."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.deploy.conftest import needs

HERE = Path(__file__).resolve()
T, C = 8, 16


class CausalMaskNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.head = nn.Linear(C, 4)
        mask = torch.triu(torch.full((T, T), torch.finfo(torch.float32).min), 1)
        self.register_buffer("mask", mask[None])

    def forward(self, x):
        s = self.q(x) @ self.k(x).transpose(1, 2) / C ** 0.5
        return self.head(torch.softmax(s + self.mask, -1) @ self.v(x))


def masknet():
    torch.manual_seed(0)
    return CausalMaskNet().eval()


def seq():
    return torch.randn(1, T, C)


@pytest.fixture(scope="module")
def qoperator(tmp_path_factory):
    needs("onnxruntime.quantization")
    import onnx

    from drifttui.core.model.export import export_model
    from tests.deploy import precision_models as PM

    folder = tmp_path_factory.mktemp("masknet")
    raw = export_model(masknet(), (seq(),), {}, "dynamo", folder)
    name = onnx.load(str(raw)).graph.input[0].name

    def feeds(i: int) -> dict:
        torch.manual_seed(i)
        return {name: seq().numpy()}
    return PM.int8_qoperator(raw, folder / "qoperator.onnx", feeds, n=4)


def _prepared(path: Path):
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    return prepare(Config(model=f"{HERE}:masknet", inputs=f"{HERE}:seq", onnx=str(path), samples=2))


def test_a_quantized_mask_is_read_back_as_the_float32_extreme_torch_holds(qoperator):
    from drifttui.core.onnx.qweights import int8_weights

    pr = _prepared(qoperator)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        weights = list(int8_weights(pr.index))
    lowest = float(np.finfo(np.float32).min)
    masks = [w for w in weights if float(np.min(w.values)) < -1e37]
    assert masks, "the quantizer stores the causal mask as an int8 tensor (the case)"
    for w in masks:
        assert np.isfinite(w.values).all(), w.name
        assert float(np.min(w.values)) == pytest.approx(lowest, rel=1e-6)
        above = np.triu(np.ones((T, T), bool), 1)
        assert np.all(w.values.reshape(T, T)[above] == np.float32(lowest)), "torch's finfo.min above the diagonal"


def test_a_clean_quantized_causal_mask_file_is_no_drift_and_no_overflow(qoperator):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = run_once(Config(model=f"{HERE}:masknet", inputs=f"{HERE}:seq", onnx=str(qoperator), samples=2)).result
    p = r.precision
    assert r.verdict == "ok" or (p.verdict == "over budget" and p.cause == "precision"), (r.verdict, p.cause,
                                                                                          r.drift_origin)
