"""A GELU form read from the module (prepare/attr_probe.py): another library's GELU (timm's) declares no
``approximate``, so a Gelu node flipped to the tanh form after a float16 conversion (its difference,
1e-4 of the value, is below float16's rounding) was within budget: the drift matrix's ConvNeXt dynamo
float16 alpha points.  The form the module computes is read on a probe; the clean file has no evidence."""
from __future__ import annotations

import onnx
import pytest

from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS, DRIFT, OK


def _check(path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.deploy import unbuilt_models as U

    return run_once(Config(model=U.spec("lib_gelu_cnn"), onnx=str(path), inputs="shape:1x3x16x16", samples=2)).result


def test_gelu_form_flipped_in_a_float16_file_is_named(tmp_path):
    from onnxruntime.transformers.float16 import convert_float_to_float16

    from tests.deploy import unbuilt_models as U

    src = U.export("lib_gelu_cnn", "dynamo", tmp_path)
    half = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
    gelus = [n for n in half.graph.node if n.op_type == "Gelu"]
    if not gelus:
        pytest.skip("this exporter writes no Gelu op")
    onnx.save(half, str(tmp_path / "half.onnx"))
    clean = _check(tmp_path / "half.onnx")
    assert clean.verdict == OK and not [L for L in clean.layers if ATTRIBUTE_NOT_THE_MODELS in L.note]
    gelus[-1].attribute.append(onnx.helper.make_attribute("approximate", "tanh"))
    for a in list(gelus[-1].attribute)[:-1]:
        if a.name == "approximate":
            gelus[-1].attribute.remove(a)
    onnx.save(half, str(tmp_path / "drift.onnx"))
    drifted = _check(tmp_path / "drift.onnx")
    assert drifted.verdict == DRIFT and drifted.drift_origin.module == "act2", drifted.drift_origin
    act2 = next(L for L in drifted.layers if L.module == "act2")
    assert "computes the erf form of GELU" in act2.note, act2.note
