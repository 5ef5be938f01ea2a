"""float16 files from the real converters: accepted (ORT's converter leaves the nodes out of order),
their precision said, held to the float16 budget, a genuine drift still found."""
from __future__ import annotations

import onnx
import pytest

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export, export_local, fp16_occ, fp16_ort, local_spec, spec


def run(model: str, inputs: str, onnx_path, **kw):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=model, inputs=inputs, onnx=str(onnx_path), samples=kw.pop("samples", 3),
                           **kw)).result


@pytest.fixture(scope="module")
def small_fp16(tmp_path_factory):
    needs("onnxruntime.transformers.float16")
    d = tmp_path_factory.mktemp("fp16-small")
    out = {}
    for fn, inputs in (("small_cnn", "img32"), ("small_tf", "seq8")):
        raw = export_local(fn, inputs, "dynamo", d / fn)
        out[fn] = (raw, fp16_ort(raw, d / f"{fn}_fp16.onnx"))
    return out


def test_ort_float16_file_is_accepted_sorted_and_said(small_fp16):
    raw, fp16 = small_fp16["small_cnn"]
    m = onnx.load(str(fp16))
    with pytest.raises(Exception, match="topologically sorted"):      # what the converter leaves
        onnx.checker.check_model(m)
    r = run(local_spec("small_cnn"), local_spec("img32"), fp16)
    assert any("not in topological order" in n and "sorted its in-memory copy" in n for n in r.notes)
    assert [n.name for n in onnx.load(str(fp16)).graph.node] == [n.name for n in m.graph.node]   # file unchanged
    assert r.outputs and r.outputs[0].top1_agreement == 1.0
    mapped = [L for L in r.layers if L.local is not None]
    assert mapped, "the local (own-error) run works on a float16 file fed from float32 torch values"
