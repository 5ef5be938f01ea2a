"""The tolerance advisor: the floor measured, the advice passes the clean model on samples it was
not measured on, and a drift of 10x the floor fails it (the verdicts are core.decide's)."""
from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from drifttui.core.compose.noise_floor import VARIANTS, measure
from drifttui.core.compose.tolerance_advice import MARGIN, advise
from drifttui.core.pipeline import Pipeline
from drifttui.core.result import OK, Config
from tests.compose import models as M
from tests.compose import pipelines as P


def _advice(cfg: Config):
    nf = measure(cfg)
    return nf, advise(nf)


def _check_clean_on_fresh_samples(cfg: Config, adv) -> None:
    fresh = dataclasses.replace(cfg, seed=1000, atol=adv.atol, rtol=adv.rtol)
    result = Pipeline().run(fresh).result
    assert result.verdict == OK, (result.drift_origin, adv.to_dict())


@pytest.mark.deploy
def test_floor_advice_passes_the_clean_model_and_catches_10x(tmp_path):
    raw = P.raw("mlp", "torchscript", tmp_path)
    cfg = Config(model=M.spec("mlp"), inputs=M.INPUTS["mlp"], onnx=str(raw), samples=4)
    nf, adv = _advice(cfg)
    assert nf.variants == [v[0] for v in VARIANTS] and nf.layers and nf.outputs
    out = nf.outputs[0]
    assert adv.rtol >= MARGIN * max(f.max_rel for f in nf.layers + nf.outputs) * 0.99
    assert adv.current["rtol_over_floor"] > 1 and "x the noise floor here" in adv.lines[-1]
    _check_clean_on_fresh_samples(cfg, adv)
    # a drift of 10x the floor at the output: the head's bias moved by 10 * floor_rel * scale
    model = onnx.load(str(raw))
    bias = next(t for t in model.graph.initializer if numpy_helper.to_array(t).shape == (8,))
    arr = numpy_helper.to_array(bias).copy()
    arr[0] += 10 * max(out.max_rel, 1e-7) * out.scale
    bias.CopyFrom(numpy_helper.from_array(arr.astype(np.float32), bias.name))
    drifted = tmp_path / "drifted.onnx"
    onnx.save(model, str(drifted))
    result = Pipeline().run(dataclasses.replace(cfg, onnx=str(drifted), atol=adv.atol, rtol=adv.rtol)).result
    assert result.verdict != OK


def _drifting_mlp(tmp_path):
    """The mlp's file with its first Linear's weight scaled by 1.01 (a drift at that layer)."""
    raw = P.raw("mlp", "torchscript", tmp_path)
    model = onnx.load(str(raw))
    w = max(model.graph.initializer, key=lambda t: int(np.prod(t.dims)) if len(t.dims) == 2 else 0)
    w.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(w) * 1.01).astype(np.float32), w.name))
    drifted = tmp_path / "drifted.onnx"
    onnx.save(model, str(drifted))
    return drifted


def test_a_drift_is_not_noise_the_advice_never_hides_it(tmp_path):
    """A drifting file's floor was its drift: 4x it hid the drift (fourth pass: `check --example
    resnet18-bf16 --tolerance auto` passed, exit 0).  The drifting layer and what inherits it are named
    and left out; the check at the advice still finds the drift."""
    cfg = Config(model=M.spec("mlp"), inputs=M.INPUTS["mlp"], onnx=str(_drifting_mlp(tmp_path)), samples=3)
    nf, adv = _advice(cfg)
    origin = Pipeline().run(cfg).result.drift_origin
    assert origin is not None and origin.module in nf.drifts
    assert all(f.name != origin.module for f in nf.layers) and nf.outputs == [] and nf.outputs_left_out
    assert adv.rtol < nf.drifts[origin.module] and "left out as drift, not noise" in adv.lines[-1]
    assert Pipeline().run(dataclasses.replace(cfg, atol=adv.atol, rtol=adv.rtol)).result.verdict != OK


def test_check_tolerance_auto_says_so(tmp_path, capsys):
    from drifttui.cli import main

    code = main(["check", M.spec("mlp"), "--inputs", M.INPUTS["mlp"], "--samples", "3", "--tolerance", "auto"])
    out = capsys.readouterr().out
    assert code == 0 and "tolerance auto: atol" in out and "noise floor" in out


@pytest.mark.models
@pytest.mark.parametrize("fn,inputs", [
    # every model of the real-architecture zoo (tests/archs/zoo.py), timm then transformers then diffusers
    ("resnet18", "img64"), ("mobilenetv3", "img64"), ("efficientnet_b0", "img64"), ("convnext_atto", "img64"),
    ("vit_timm", "img32"), ("mixer", "img64"), ("bert", "tokens"), ("gpt2", "tokens"), ("llama", "tokens"),
    ("t5", "token_ids"), ("vit_hf", "pixels"), ("clip_vision", "pixels"), ("whisper_encoder", "mel"),
    ("swin", "pixels64"), ("swin_eager", "pixels64"), ("wav2vec2", "audio"), ("segformer", "pixels64"),
    ("unet2d", "unet_inputs")])
def test_zoo_clean_models_pass_the_advice(fn, inputs):
    from tests.archs.conftest import spec

    pytest.importorskip("tests.archs.zoo")      # the torchvision shim timm needs
    timm = ("resnet18", "mobilenetv3", "efficientnet_b0", "convnext_atto", "vit_timm", "mixer")
    pytest.importorskip("timm" if fn in timm else "diffusers" if fn == "unet2d" else "transformers")
    cfg = Config(model=spec(fn), inputs=spec(inputs), samples=3)
    _, adv = _advice(cfg)
    _check_clean_on_fresh_samples(cfg, adv)
