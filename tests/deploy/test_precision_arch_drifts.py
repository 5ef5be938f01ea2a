"""Real architectures through the converters with a weight drift planted after conversion (issue 33,
point 8; `make test-deploy`): each is named where drifttui names the same drift in the raw float32
export (the truth the converted file is held to), and the clean converted file has no weight note.

The drifts are the ones the issue names or the private set planted: a float16 projection x1.05 (ViT,
ConvNeXt), an int8 GPT-2 projection's weight scale x1.3 (quantize_dynamic with reduce_range), a
weight scale x1.3 in a saturating default quantize_dynamic BERT (every layer over its budget on a CPU
without VNNI: the drift must still be the origin), and moved int8 integers in a Conv with a folded
BatchNorm (EfficientNet QDQ, per channel)."""
from __future__ import annotations

import pytest

from tests.deploy import processed as P
from tests.deploy import qkv_models as Q
from tests.deploy.conftest import needs
from tests.deploy.precision_models import export, fp16_ort, int8_dynamic, int8_qdq, spec

pytestmark = pytest.mark.deploy


def run(fn: str, inputs: str, path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=spec(fn), inputs=spec(inputs), onnx=str(path), samples=2)).result


def _convert(kind: str, raw, dst, inputs: str):
    if kind == "fp16":
        return fp16_ort(raw, dst)
    if kind in ("dynamic", "dynamic_rr"):
        return int8_dynamic(raw, dst, reduce_range=kind == "dynamic_rr")
    from tests.deploy.test_precision_archs import _feeds

    return int8_qdq(raw, dst, _feeds(raw, inputs), n=4, per_channel=True)


@pytest.mark.parametrize("fn, inputs, exporter, kind, module, drift, factor", [
    ("vit_hf", "img32", "dynamo", "fp16", "layers.1.mlp.fc1", "float16", 1.05),
    ("convnext_atto", "img32", "torchscript", "fp16", "stages.2.blocks.0.mlp.fc1", "float16", 1.05),
    ("gpt2", "token_ids", "dynamo", "dynamic_rr", "h.0.attn.c_proj", "scale", 1.3),
    ("bert", "tokens", "dynamo", "dynamic", "encoder.layer.1.intermediate.dense", "scale", 1.3),
    ("efficientnet_b0", "img64", "torchscript", "qdq", "blocks.4.0.conv_pwl", "int8", 1.0),
])
def test_a_weight_drift_in_a_converted_architecture_is_named_as_in_the_raw_export(
        tmp_path, fn, inputs, exporter, kind, module, drift, factor):
    from drifttui.core.result import WEIGHT_NOT_THE_MODELS

    needs("transformers")
    zoo = __import__("zoo")      # transformers first, then the torchvision shim timm needs (tests/archs/zoo.py)
    needs("timm" if fn in ("convnext_atto", "efficientnet_b0") else "transformers")
    needs("onnxruntime.quantization")
    raw = export(fn, inputs, exporter, tmp_path / "raw")
    w = getattr(zoo, fn)().get_submodule(module).weight.detach().numpy()
    truth = run(fn, inputs, P.scale_weight(raw, w, factor if factor != 1.0 else 1.2, tmp_path / "raw-drift.onnx"))
    assert truth.drift_origin is not None
    conv = _convert(kind, raw, tmp_path / "conv.onnx", inputs)
    clean = run(fn, inputs, conv)
    assert not [L.module for L in clean.layers if WEIGHT_NOT_THE_MODELS in L.note]
    bad = run(fn, inputs, Q.plant_weight(conv, tmp_path / "bad.onnx", w, drift, factor))
    assert bad.verdict == "drift" and bad.drift_origin is not None, bad.precision
    assert bad.drift_origin.module == truth.drift_origin.module, (bad.drift_origin.module, truth.drift_origin.module)
    assert bad.precision.cause == "genuine drift"
