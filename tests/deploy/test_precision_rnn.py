"""quantize_dynamic on an LSTM model writes a DynamicQuantizeLSTM (W, R and B side by side): ORT runs
it, so drifttui checks it (before: an internal failure, exit 3, reading W, R, B as a weight with its
scale and zero point), as an int8 dynamic file within its budget (before the op was counted: the
GRU after it named the origin at float32's tolerance)."""
from __future__ import annotations

import pytest

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, int8_dynamic, local_spec


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_dynamically_quantized_lstm_is_checked_within_its_budget(tmp_path, exporter):
    needs("onnxruntime.quantization")
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    raw = export_local("lstm_gru", "seq10", exporter, tmp_path / "raw")
    path = int8_dynamic(raw, tmp_path / "dyn.onnx")
    r = run_once(Config(model=local_spec("lstm_gru"), inputs=local_spec("seq10"), onnx=str(path), samples=3)).result
    assert "DynamicQuantizeLSTM" in r.precision.evidence
    assert r.precision.verdict == "within budget" and r.verdict == "ok", r.drift_origin
