"""onnxslim on a transformer with a fused ``attn.qkv`` Linear (issue 33, point 7).

onnxslim turns each MatMul + Add into Reshape -> Gemm -> Reshape and merges the last Reshape with the
attention's own (to [b, t, 3, heads, d]): the qkv Linear's value [1, 8, 96] is gone, only the Gemm's
flattened [8, 96] is left.  The TorchScript file keeps its names and producer, so it was mapped as a raw
export and lost both qkv calls (20 of 22).  The nodes onnxslim writes are named after the values they
replaced (``/layers.0/attn/qkv/MatMul_output_0``), which the exporter never does: the file is a processed
one, mapped through a reference export, and each call is found."""
from __future__ import annotations

import pytest

from tests.deploy import processed as P
from tests.deploy import qkv_models as Q
from tests.deploy.conftest import needs


def check(path, samples: int = 2):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=Q.spec("qkv_tf"), inputs=Q.spec("seq"), onnx=str(path), samples=samples)).result


@pytest.mark.parametrize("exporter", ["torchscript", pytest.param("dynamo", marks=pytest.mark.deploy)])
def test_onnxslim_qkv_transformer_is_mapped_whole_and_a_drift_named(tmp_path, exporter):
    needs("onnxslim")
    import onnx

    raw = Q.export(exporter, tmp_path / "raw")
    embedded = tmp_path / "raw.onnx"
    onnx.save(onnx.load(str(raw)), str(embedded))
    slim = P.onnxslim(embedded, tmp_path / "slim.onnx")
    clean, base = check(slim), check(embedded, samples=1)
    assert clean.verdict == "ok", (clean.drift_origin, clean.notes)
    assert P.covered(clean) == P.covered(base) == clean.coverage.modules == 22, clean.coverage
    assert all(L.status == "ok" for L in clean.layers if L.module.endswith("attn.qkv"))
    for module in ("layers.1.attn.qkv", "layers.0.mlp.0"):
        w = Q.qkv_tf().get_submodule(module).weight.detach().numpy()
        bad = check(P.scale_weight(slim, w, 1.05, tmp_path / f"{module}.onnx"))
        assert bad.verdict == "drift" and bad.drift_origin.module == module, bad.drift_origin
