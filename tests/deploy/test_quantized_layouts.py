"""A file nobody here built: ONNX Runtime's standard int8 path (``quant_pre_process``, then ``quantize_static`` QDQ
per channel) of a transformers ConvNeXt exported by dynamo.  The pre-processing's optimiser moves each block's
transposes past its residual ``Add``, which the file then computes channels-last; at the first stage's 16x16 map of
16 channels every dim is 16, so the block's output was paired raw with the layer-scale ``Mul`` (relative error 1.0,
nothing of the value) and read as a drift with a cosine of 0: a false origin at ``stages.0.layers.0``.  The value is
now read through the permutation (``prepare/plan/nearest.lossy_permuted``)."""
from __future__ import annotations

import contextlib
import io
import sys
import warnings

import numpy as np
import pytest

_CONVNEXT = """
import torch
from transformers import ConvNextConfig, ConvNextForImageClassification


def model():
    torch.manual_seed(0)
    cfg = ConvNextConfig(num_channels=3, hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 2, 1], num_labels=10,
                         image_size=64)
    return ConvNextForImageClassification(cfg).eval()


def img():
    return torch.randn(1, 3, 64, 64)
"""


def _spec(tmp_path):
    spec = tmp_path / "cnx.py"
    spec.write_text(_CONVNEXT)
    sys.path.insert(0, str(tmp_path))
    try:
        import cnx  # noqa: E402
    finally:
        sys.path.remove(str(tmp_path))
    return spec, cnx


@pytest.mark.deploy
def test_an_int8_block_computed_channels_last_is_read_through_its_permutation(tmp_path):
    import torch
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, quant_pre_process,
                                          quantize_static)

    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    spec, cnx = _spec(tmp_path)
    src, pre, qdq = tmp_path / "convnext.onnx", tmp_path / "pre.onnx", tmp_path / "qdq.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(cnx.model(), (cnx.img(),), str(src), dynamo=True, input_names=["pixel_values"])
    quant_pre_process(str(src), str(pre))

    class Calibration(CalibrationDataReader):
        def __init__(self) -> None:
            self.k = 0

        def get_next(self):
            if self.k >= 8:
                return None
            torch.manual_seed(100 + self.k)
            self.k += 1
            return {"pixel_values": cnx.img().numpy()}

    quantize_static(str(pre), str(qdq), Calibration(), quant_format=QuantFormat.QDQ, per_channel=True)
    result = run_once(Config(model=f"{spec}:model", onnx=str(qdq), reference_onnx=str(src), inputs=f"{spec}:img",
                             samples=3, seed=7)).result
    block = next(L for L in result.layers if L.module == "convnext.encoder.stages.0.layers.0")
    assert block.onnx_values != ["mul"], block.onnx_values            # the layer scale's product is not the block
    assert block.metrics is not None and block.metrics.cosine.worst > 0.99, block.metrics
    assert result.drift_origin is None or result.drift_origin.module != block.module, result.drift_origin
    assert result.coverage.unmapped == 0
    assert np.isfinite(block.metrics.max_abs.worst)
