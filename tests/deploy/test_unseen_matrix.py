"""Files nobody here built (issue 33, "Judged by"; `make test-deploy`): LLaMA, T5's encoder and Whisper's
encoder (transformers, seeded, nothing downloaded) x every deployment tool (tests/deploy/unseen_matrix.py:
the drift matrix's tools, onnxconverter-common without keep_io_types, the transformers optimizer,
auto_mixed_precision, int4), clean and with one drift planted after the tool.  Each clean file is ok, or
over budget for its precision alone; each drift is named where the raw export's same drift is.

The points here are those this suite found failing and the engine now holds (the full matrix:
``python -m tests.deploy.unseen_matrix``, its figures in docs/deploy.md):
- a clean QDQ Whisper (both exporters) was DRIFT, "genuine drift" at ``layers.0.self_attn.out_proj``: its
  own error is its output's QuantizeLinear rounding, which the recomputation (capture/rounding.py) did
  not round, so its derived budget was 3.8x too tight;
- LLaMA's int4 ``up_proj`` with its block scales x1.3 passed as within the int4 bound (no weight check
  of MatMulNBits weights);
- the erf GELU's sqrt 2 planted in a TorchScript Whisper's QOperator file was named at another layer (the
  activation's constants are now compared with the module exported alone);
- Whisper TorchScript through ORT basic covered 92% of the raw export: each ``self_attn.v_proj`` unmapped.
  MatMulAddFusion made the Linear Reshape, Gemm, Reshape and ReshapeFusion merged that Reshape into the
  head split's, so only the flattened Gemm output is left, read by ORT's scope-less Reshape; the absorbed
  view's way back took the Linear's own scope from it and hid the view (plan/absorbed.py).
"""
from __future__ import annotations

import pytest

from tests.deploy import unseen_matrix as U
from tests.deploy.drift_matrix import outcome

pytestmark = pytest.mark.deploy


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return U.file_getter(tmp_path_factory)


_clean_ok = U.assert_clean


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_a_clean_qdq_whisper_is_no_drift_and_its_drifts_are_named(files, tmp_path, exporter):
    raw = files("whisper", exporter)
    dep = files("whisper", exporter, "qdq")
    _clean_ok(U.check("whisper", dep), U.covered(U.check("whisper", raw)))
    for kind in ("weight", "qscale", "epsilon", "pads"):
        truth = U.check("whisper", U.plant("whisper", kind, raw, tmp_path / f"raw-{kind}.onnx", raw=True))
        bad = U.plant("whisper", kind, dep, tmp_path / f"{kind}.onnx")
        assert outcome(U.check("whisper", bad), truth.drift_origin.module) == "named", kind


@pytest.mark.parametrize("tool", ["int4", "dynamic", "qoperator", "trf-opt", "amp", "fp16-occ-io"])
def test_llama_through_the_tools_the_drift_matrix_lacks(files, tmp_path, tool):
    raw = files("llama", "dynamo")
    dep = files("llama", "dynamo", tool)
    if dep is None:
        pytest.skip(f"ONNX Runtime refuses {tool}'s own file")
    _clean_ok(U.check("llama", dep), U.covered(U.check("llama", raw)))
    kind = "qscale" if tool in ("int4", "dynamic", "qoperator") else "weight"
    truth = U.check("llama", U.plant("llama", kind, raw, tmp_path / "raw.onnx", raw=True))
    bad = U.plant("llama", kind, dep, tmp_path / "bad.onnx")
    assert bad is not None
    assert outcome(U.check("llama", bad), truth.drift_origin.module) == "named"


@pytest.mark.parametrize("tool", ["qdq", "qoperator"])
def test_a_gelu_constant_in_a_quantized_torchscript_whisper_is_named(files, tmp_path, tool):
    """The erf form's sqrt 2 x1.25 in Whisper's int8 GELU (its own Q/DQ or QLinear nodes): QOperator went to
    layers.0.self_attn.v_proj as a precision story before the activation's constants were compared with the
    module exported alone (prepare/attr_consts.py); the clean file has no attribute evidence."""
    from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS

    raw = files("whisper", "torchscript")
    dep = files("whisper", "torchscript", tool)
    clean = U.check("whisper", dep)
    assert not [L.module for L in clean.layers if ATTRIBUTE_NOT_THE_MODELS in L.note]
    truth = U.check("whisper", U.plant("whisper", "alpha", raw, tmp_path / "raw-alpha.onnx", raw=True))
    bad = U.check("whisper", U.plant("whisper", "alpha", dep, tmp_path / "alpha.onnx"))
    assert outcome(bad, truth.drift_origin.module) == "named" and bad.precision.cause == "genuine drift"


def test_whisper_torchscript_through_ort_basic_maps_the_value_projections(files, tmp_path):
    dep = files("whisper", "torchscript", "ort-basic")
    raw = files("whisper", "torchscript")
    result = U.check("whisper", dep)
    _clean_ok(result, U.covered(U.check("whisper", raw)))
    assert U.covered(result) == U.covered(U.check("whisper", raw))
    v = next(layer for layer in result.layers if layer.module == "layers.1.self_attn.v_proj")
    assert v.status == "ok" and v.metrics is not None, (v.status, v.note)
    for kind in ("weight", "epsilon", "pads", "alpha"):
        truth = U.check("whisper", U.plant("whisper", kind, raw, tmp_path / f"raw-{kind}.onnx", raw=True))
        bad = U.plant("whisper", kind, dep, tmp_path / f"{kind}.onnx")
        assert outcome(U.check("whisper", bad), truth.drift_origin.module) == "named", kind
    # a drift in the projection the mapping now reaches is named there, not at the out_proj reading it
    from tests.deploy import arch_drifts as AD

    w = U.whisper().get_submodule("layers.1.self_attn.v_proj").weight.detach().numpy()
    bad = U.check("whisper", AD.weight(dep, w, tmp_path / "v_proj.onnx", 1.05))
    assert outcome(bad, "layers.1.self_attn.v_proj") == "named", bad.drift_origin
