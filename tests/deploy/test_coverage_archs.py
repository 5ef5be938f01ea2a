"""Coverage of deployed files against the raw export of the same model (issue 33: "coverage >= 95% of
the raw export on every file").  Coverage: the module calls mapped or fused (``processed.covered``),
in the deployed file over the raw export's.  Each file is checked as a user checks it; the test
asserts the mapping, not the precision verdict (test_precision_*.py judge that).

The long part (``deploy``, make test-deploy): timm's EfficientNet-B0, MobileNetV3, ResNet-18,
ConvNeXt and ViT, transformers' BERT and GPT-2 (tests/archs/zoo.py, seeded, nothing downloaded)
through every tool: onnxsim, onnxslim, ORT offline basic/extended/all, float16, quantize_dynamic,
quantize_static QDQ and QOperator.  The fast part (make test): the suite's small CNN and
transformer through the quantizers and the float16 converter.
"""
from __future__ import annotations

import os

import onnx
import pytest

from tests.deploy import precision_models as PM
from tests.deploy import processed as P
from tests.deploy.conftest import needs

INPUTS = {"efficientnet_b0": "img32", "mobilenetv3": "img64", "resnet18": "img32", "convnext_atto": "img32",
          "vit_timm": "img32", "bert": "tokens", "gpt2": "token_ids", "small_cnn": "img32", "small_tf": "seq8"}
# the exporter each architecture is checked with (GPT-2's TorchScript export fails in transformers' mask
# code; BERT's dynamo export is the one users get from transformers' own exporter)
EXPORTER = {"bert": "dynamo", "gpt2": "dynamo"}
TOOLS = ("onnxsim", "onnxslim", "ort-basic", "ort-extended", "ort-all", "fp16", "dynamic", "qdq", "qoperator")
# quantize_static QOperator refuses the TorchScript EfficientNet, MobileNetV3 and ConvNeXt itself ("'NoneType'
# object has no attribute 'data_type'" in quantize_bias_static): TorchScript writes equal initializers once, so
# their equal Conv biases (the SE blocks'; ConvNeXt's zero-initialised ones) are Identity outputs, not
# initializers: no file to check
NO_FILE = {("efficientnet_b0", "qoperator"), ("mobilenetv3", "qoperator"), ("convnext_atto", "qoperator")}
ARCHS = ("efficientnet_b0", "mobilenetv3", "resnet18", "convnext_atto", "vit_timm", "bert", "gpt2")
FAST = [("small_cnn", t) for t in ("fp16", "dynamic", "qdq", "qoperator")] + [("small_tf", t) for t in ("dynamic", "qdq")]


def _spec(fn: str) -> str:
    return PM.local_spec(fn) if fn.startswith("small_") else PM.spec(fn)


def _input_spec(fn: str) -> str:
    return PM.local_spec(INPUTS[fn]) if fn.startswith("small_") else PM.spec(INPUTS[fn])


def _feeds(raw, fn: str):
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.spec import parse_input_spec

    names = [i.name for i in onnx.load(str(raw), load_external_data=False).graph.input]
    source = build_source(parse_input_spec(_input_spec(fn)), 0, False, None, None)

    def feed(i: int) -> dict:
        args, kwargs = source.sample(i)
        return {n: t.numpy() for n, t in zip(names, list(args) + list(kwargs.values()))}
    return feed


def _convert(fn: str, tool: str, raw, dst):
    if tool in ("onnxsim", "onnxslim"):
        needs(tool)
        return getattr(P, tool)(raw, dst)
    if tool.startswith("ort-"):
        return P.ort_offline(tool[4:])(raw, dst)
    if tool == "fp16":
        return PM.fp16_ort(raw, dst)
    if tool == "dynamic":
        return PM.int8_dynamic(raw, dst)
    quantize = PM.int8_qdq if tool == "qdq" else PM.int8_qoperator
    return quantize(raw, dst, _feeds(raw, fn), n=4)


def _check(fn: str, path, samples: int = 1):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=_spec(fn), inputs=_input_spec(fn), onnx=str(path), samples=samples)).result


@pytest.fixture(scope="module")
def raws(tmp_path_factory):
    """Each model's raw export (one self-contained file) and drifttui's verdict on it, made once."""
    cache: dict = {}

    def get(fn: str):
        if fn not in cache:
            if not fn.startswith("small_"):
                needs("transformers")
                __import__("zoo")          # transformers first, then timm's torchvision shim
                needs("timm")
            folder = tmp_path_factory.mktemp(fn)
            if fn.startswith("small_"):
                path = PM.export_local(fn, INPUTS[fn], "torchscript", folder / "x")
            else:
                path = PM.export(fn, INPUTS[fn], EXPORTER.get(fn, "torchscript"), folder / "x")
            one = folder / "raw.onnx"
            onnx.save(onnx.load(str(path)), str(one))
            cache[fn] = (one, _check(fn, one))
        return cache[fn]
    return get


def _assert_coverage(raws, tmp_path, fn: str, tool: str) -> None:
    raw, raw_result = raws(fn)
    result = _check(fn, _convert(fn, tool, raw, tmp_path / f"{tool}.onnx"))
    got, want = P.covered(result), P.covered(raw_result)
    _record(fn, tool, raw_result, result)
    assert got >= 0.95 * want, (fn, tool, result.coverage, raw_result.coverage,
                                [(l.module, l.status, l.note) for l in result.layers if l.status == "unmapped"])


def _record(fn: str, tool: str, raw, result) -> None:
    """DRIFTTUI_COVERAGE_TABLE=FILE: one Markdown row per file (docs/deploy.md's coverage table)."""
    out = os.environ.get("DRIFTTUI_COVERAGE_TABLE")
    if out:
        c, r = result.coverage, raw.coverage
        with open(out, "a") as f:
            f.write(f"| {fn} | {tool} | {r.mapped} + {r.fused} | {c.mapped} + {c.fused} "
                    f"| {P.covered(result) / max(1, P.covered(raw)):.0%} |\n")


@pytest.mark.parametrize("fn,tool", FAST, ids=[f"{a}-{t}" for a, t in FAST])
def test_small_model_coverage_in_reduced_precision(raws, tmp_path, fn, tool):
    _assert_coverage(raws, tmp_path, fn, tool)


LONG = [(a, t) for a in ARCHS for t in TOOLS if (a, t) not in NO_FILE]


@pytest.mark.deploy
@pytest.mark.parametrize("fn,tool", LONG, ids=[f"{a}-{t}" for a, t in LONG])
def test_real_architecture_coverage_against_the_raw_export(raws, tmp_path, fn, tool):
    _assert_coverage(raws, tmp_path, fn, tool)
