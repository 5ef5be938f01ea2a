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


def test_a_drift_upstream_of_an_unmapped_call_says_so(tmp_path):
    """A wrong LSTM weight: the LSTM is unmapped (its ONNX output has a num_directions axis), so the
    drift shows first at the GRU after it; the report says that an unmapped call ran before the
    origin, naming it, rather than leaving the GRU as the whole story."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    raw = export_local("lstm_gru", "seq10", "torchscript", tmp_path / "raw")
    m = onnx.load(str(raw))
    lstm = next(n for n in m.graph.node if n.op_type == "LSTM")
    t = next(t for t in m.graph.initializer if t.name == lstm.input[1])
    t.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(t) * np.float32(1.05)), t.name))
    bad = tmp_path / "bad.onnx"
    onnx.save(m, str(bad))
    r = run_once(Config(model=local_spec("lstm_gru"), inputs=local_spec("seq10"), onnx=str(bad), samples=2)).result
    statuses = {L.module: L.status for L in r.layers}
    assert r.drift_origin is not None
    if statuses.get("lstm") == "unmapped":
        assert any("ran before the origin are unmapped (lstm)" in n for n in r.notes), r.notes
    else:                         # mapped one day: then it must be the origin itself
        assert r.drift_origin.module == "lstm"
