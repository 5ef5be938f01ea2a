"""A constant factor a tool moved into a Conv's weight (issue 33, the drift matrix's ConvNeXt misses).

ORT's ConvMulFusion (ENABLE_BASIC) multiplies a layer scale ``gamma`` that follows a Conv into the
Conv's weight and bias: the Conv then outputs ``gamma`` times its module's value, under the
TorchScript scope of the Conv (a false DRIFT at every ConvNeXt ``mlp.fc2``, mapped by scope).  Such a
file is processed (a Conv outputs the value of a node the file no longer has) and is mapped through a
reference export, where the Conv's value equals the reference's value one node later: the module is
fused into the unit, compared as part of it.  onnxsim moves a factor the other way (into the next
Conv's weight, plan/scale_folds.py); a layer scale below zero turns the reader's rows around, which
is still a factor per output row.  Fast: the suite's small LayerScaleCNN; deploy: timm's ConvNeXt.
"""
from __future__ import annotations

import pytest

from drifttui.core.result import FUSED, OK
from tests.deploy import processed as P
from tests.deploy.conftest import needs
from tests.deploy.test_unbuilt_files import _layer, _named_at, scale_by_content


def _check(name: str, path, samples: int = 2):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.deploy import unbuilt_models as U

    return run_once(Config(model=U.spec(name), onnx=str(path), inputs="shape:1x3x16x16", samples=samples)).result


@pytest.mark.parametrize("name", ["layer_scale_cnn", "layer_scale_cnn_signed"])
def test_scale_folded_into_the_conv_before_is_fused_not_a_drift(tmp_path, name):
    """ORT basic folds ``gamma`` into pw's Conv: the clean file is ok (pw was a DRIFT of exactly gamma's
    effect), pw is fused into the unit whose node computes it now, and a weight drift planted after
    ORT in pw's folded weight, or in the first Conv, is named at its module."""
    import onnx

    from tests.deploy import unbuilt_models as U

    src = U.export(name, "torchscript", tmp_path)
    dep = P.ort_offline("basic")(src, tmp_path / "basic.onnx")
    if any(n.op_type == "Mul" and n.name.startswith("/Mul") for n in onnx.load(str(dep)).graph.node):
        pytest.skip("this onnxruntime no longer folds the layer scale into the Conv (ConvMulFusion)")
    result = _check(name, dep)
    assert result.verdict == OK, (result.drift_origin, [(l.module, l.status, l.note) for l in result.layers])
    assert _layer(result, "pw").status == FUSED
    assert any("a constant folded into the node before it" in n for n in result.notes), result.notes
    assert P.covered(result) >= P.covered(_check(name, src, samples=1))
    model = getattr(U, name)()
    for module in ("pw", "conv"):
        w = model.get_submodule(module).weight.detach().numpy()
        drifted = _check(name, scale_by_content(dep, w, 1.05, tmp_path / f"{module}.onnx"))
        assert _named_at(drifted, module), (module, drifted.drift_origin)


def test_negative_layer_scale_folded_into_the_next_conv_by_onnxsim(tmp_path):
    """onnxsim moves the GELU's ``* 0.5`` into pw's weight, whose rows also carry gamma: with a gamma
    below zero a row points the reference row's opposite way, and the GELU was a false DRIFT."""
    needs("onnxsim")
    from tests.deploy import unbuilt_models as U

    src = U.export("layer_scale_cnn_signed", "torchscript", tmp_path)
    result = _check("layer_scale_cnn_signed", P.onnxsim(src, tmp_path / "sim.onnx"))
    assert result.verdict == OK, (result.drift_origin, [(l.module, l.status, l.note) for l in result.layers])
    assert _layer(result, "act").status == FUSED


@pytest.mark.deploy
def test_convnext_ort_basic_layer_scales(tmp_path):
    """timm's ConvNeXt (the matrix's: every 1-dim parameter randomised, so half the layer scales are
    negative) through ORT basic, TorchScript: clean (a false DRIFT at every mlp.fc2 before), covered as
    the raw export is, and a weight drift after ORT in a folded fc2 named there."""
    from tests.deploy import drift_matrix as M

    raw = M.export("convnext_atto", "torchscript", tmp_path)
    dep = P.ort_offline("basic")(raw, tmp_path / "basic.onnx")
    result = M.check("convnext_atto", dep)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    assert P.covered(result) >= 0.95 * P.covered(M.check("convnext_atto", raw, samples=1))
    for name in ("stages.1.blocks.0.mlp.fc2", "stages.2.blocks.3.mlp.fc1"):
        w = M.convnext_atto().get_submodule(name).weight.detach().numpy()
        drifted = M.check("convnext_atto", scale_by_content(dep, w, 1.05, tmp_path / "d.onnx"))
        assert _named_at(drifted, name), (name, drifted.drift_origin)


def test_a_value_near_itself_is_not_a_moved_factor():
    """On a 1x1 map every value is some factor per channel times the reference: a GELU flipped to its
    tanh form (ratios within 0.3% of 1) passed as a factor folded into the next Conv (fused: the drift
    hidden in the block, in the matrix's onnxsim ConvNeXt, dynamo).  One factor for all channels (the
    GELU's 0.5) is still one; a ratio per channel that strays near 1 is not."""
    import numpy as np

    from drifttui.core.prepare.plan.scale_folds import _channel_scale, _compensates

    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 64, 1, 1))
    drifted = a * (1 + rng.uniform(-3e-3, 3e-3, a.shape))
    assert _channel_scale(a, drifted, 1) is None
    s = _channel_scale(a, 2 * a, 1)
    assert s is not None and np.allclose(s, 2.0)
    a4 = rng.standard_normal((1, 64, 4, 4))
    sv = rng.uniform(0.3, 3.0, 64)                         # a factor per channel (a layer scale before the reader)
    s4 = _channel_scale(a4, a4 * sv[None, :, None, None], 1)
    assert s4 is not None and np.allclose(s4, sv)
    w = rng.standard_normal((8, 64, 1, 1))
    gamma = rng.uniform(-1, 1, (8, 1, 1, 1))                # folded from after the reader: rows of both signs
    assert _compensates(gamma * w / sv[None, :, None, None], w, 1, s4)     # the weight took exactly 1 / s
    assert not _compensates(gamma * w, w, 1, s4)           # it took nothing along its input axis
