"""The long tail (make test-deploy): real architectures from timm and transformers (seeded random
weights, nothing downloaded) converted with the real tools, each detected and within its budget."""
from __future__ import annotations

import onnx
import pytest

from tests.deploy.conftest import needs
from tests.deploy.drift_matrix import feeds_by_name
from tests.deploy.precision_models import export, fp16_ort, int8_dynamic, int8_qdq, int8_qoperator, spec

pytestmark = pytest.mark.deploy


def run(fn: str, inputs: str, path, samples: int = 2):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=spec(fn), inputs=spec(inputs), onnx=str(path), samples=samples)).result


def _feeds(raw, inputs: str):
    """Sample i as drifttui draws it, by the graph's input names: the calibration data."""
    return feeds_by_name(raw, spec(inputs))


@pytest.mark.parametrize("fn, inputs, exporter, convert, fmt", [
    ("resnet18", "img32", "torchscript", "int8_dynamic_rr", "int8"),
    ("resnet18", "img32", "dynamo", "fp16_ort", "float16"),
    ("bert", "tokens", "dynamo", "fp16_ort", "float16"),
    # (GPT-2 through quantize_dynamic: within budget since issue 18's transfer keeps the reference's
    # graph order and compares packed weights; it was a strict xfail: ln_f mapped to a later Reshape)
    ("gpt2", "token_ids", "dynamo", "int8_dynamic_rr", "int8"),
    ("llama", "tokens", "dynamo", "fp16_ort", "float16"),
    # static quantization calibrated on the checked samples (QDQ and QOperator), and int4 weight-only:
    # the BERT QOperator file was over at a false origin (a LayerNorm almost the identity on its input
    # was mapped to the residual Add before it) until the matching told near-equal values apart by op
    ("resnet18", "img32", "torchscript", "int8_qdq", "int8"),
    ("resnet18", "img32", "torchscript", "int8_qoperator", "int8"),
    ("bert", "tokens", "dynamo", "int8_qdq", "int8"),
    ("bert", "tokens", "dynamo", "int8_qoperator", "int8"),
    ("llama", "tokens", "dynamo", "int4", "int4"),
])
def test_real_architecture_reduced_precision_is_detected_and_within_budget(tmp_path, fn, inputs, exporter,
                                                                         convert, fmt):
    needs("transformers")
    __import__("zoo")            # transformers first, then the torchvision shim timm needs (tests/archs/zoo.py)
    needs("timm" if fn == "resnet18" else "transformers")
    raw = export(fn, inputs, exporter, tmp_path / "raw")
    if convert == "fp16_ort":
        path = fp16_ort(raw, tmp_path / "fp16.onnx")
    elif convert in ("int8_qdq", "int8_qoperator"):
        quantize = int8_qdq if convert == "int8_qdq" else int8_qoperator
        path = quantize(raw, tmp_path / "int8.onnx", _feeds(raw, inputs), n=4)
    elif convert == "int4":
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        q = MatMulNBitsQuantizer(onnx.load(str(raw)), block_size=32, is_symmetric=True)
        q.process()
        path = tmp_path / "int4.onnx"
        q.model.save_model_to_file(str(path), False)
    else:
        path = int8_dynamic(raw, tmp_path / "int8.onnx", reduce_range=True)
    r = run(fn, inputs, path)
    assert r.precision is not None and r.precision.format == fmt
    assert r.precision.verdict == "within budget", [(L.module, L.status, L.budget) for L in r.layers
                                                    if L.budget is not None and L.budget.over]
    assert any(L.budget is not None and L.budget.own_loss_db is not None for L in r.layers)
