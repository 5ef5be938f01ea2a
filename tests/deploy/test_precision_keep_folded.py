"""A keep-in-float32 copy of an int8 file whose Conv weights hold a folded BatchNorm (TorchScript folds
it, then ``quantize_dynamic`` rounds the folded weight): the kept Conv computes with torch's weight
*through the fold*, not with the int8-rounded copy (no torch tensor has the folded values by name or
content, so before, the kept layer kept the rounding and a keep-list was judged to leave a drift: a
timm MobileNetV3's quantize_dynamic file got no keep-list)."""
from __future__ import annotations

import onnx

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, int8_dynamic, local_spec

SAMPLES = 4


def _kept_error(pr, weights, path) -> float:
    from drifttui.core.onnx.edit.keep.float32 import keep_float32, without_views
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    onnx.save(without_views(keep_float32(pr.proto, pr.index, set(pr.precision.nodes), weights)), str(path))
    r = run_once(Config(model=local_spec("folded_cnn"), inputs=local_spec("img32"), onnx=str(path),
                        samples=SAMPLES)).result
    return max(o.metrics.max_abs.worst for o in r.outputs)


def test_a_kept_conv_with_a_folded_batchnorm_computes_with_torchs_folded_weight(tmp_path):
    needs("onnxruntime.quantization")
    from drifttui.core.capture.shares import torch_tensors
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    raw = export_local("folded_cnn", "img32", "torchscript", tmp_path / "raw")
    assert not any(n.op_type == "BatchNormalization" for n in onnx.load(str(raw)).graph.node)   # folded
    dyn = int8_dynamic(raw, tmp_path / "dynamic.onnx")
    assert any(n.op_type == "ConvInteger" for n in onnx.load(str(dyn)).graph.node)
    pr = prepare(Config(model=local_spec("folded_cnn"), inputs=local_spec("img32"), onnx=str(dyn), samples=SAMPLES))
    by_name = _kept_error(pr, torch_tensors(pr.model), tmp_path / "by-name.onnx")
    folded = _kept_error(pr, torch_tensors(pr.model, pr.calls), tmp_path / "folded.onnx")
    # every reduced node kept: the copy is a float32 file, exact up to float32 rounding
    assert folded < 1e-4 and folded < by_name / 50, (folded, by_name)
