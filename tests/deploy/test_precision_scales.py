"""The int8 activation budget from the file's own scale: the rounding of a quantized activation is
+-scale/2 per element, i.e. a relative step of 1 / max|q - zero point| over what it dequantizes to
(measured on sample 0; DynamicQuantizeLinear computes its scale from the tensor's min / max), not
an assumed 2/255 of the range.  A heavy-tailed activation (one conv channel x TAIL) with a small
static range [0, 6] is judged by what that clipping costs: nothing after a ReLU6 (PyTorch clips
there too), the tail's signal after a ReLU.  A coarse static scale (calibrated on inputs 10x wider
than the checked ones) is what that file's precision costs: within its budget (the assumed step
called it over budget, at the first conv)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, feeds_of, int8_dynamic, int8_qdq, local_spec

SAMPLES = 4


def run(fn: str, path):
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    engine = Pipeline()
    result = engine.run(Config(model=local_spec(fn), inputs=local_spec("img32"), onnx=str(path), samples=SAMPLES)).result
    return engine, result


def clipped_at_6(fn: str, folder):
    """quantize_static QDQ with the stem activation's range set to [0, 6] (TensorQuantOverrides)."""
    raw = export_local(fn, "img32", "torchscript", folder / fn)
    m = onnx.load(str(raw))
    act = next(n.output[0] for n in m.graph.node if n.op_type in ("Relu", "Clip") and n.name.startswith("/stem/"))
    rng = [{"rmin": np.array(0.0, np.float32), "rmax": np.array(6.0, np.float32)}]
    return int8_qdq(raw, folder / f"{fn}_clip6.onnx", feeds_of("img32", m.graph.input[0].name), n=SAMPLES,
                    reduce_range=True, extra_options={"TensorQuantOverrides": {act: rng}})


def out_rel(result) -> float:
    return max(o.metrics.max_rel.worst for o in result.outputs)


def test_a_static_range_that_clips_a_heavy_tail_is_judged_by_what_it_costs(tmp_path):
    needs("onnxruntime.quantization")
    _, free = run("tail_relu6", clipped_at_6("tail_relu6", tmp_path))
    _, costly = run("tail_relu", clipped_at_6("tail_relu", tmp_path))
    # after a ReLU6 the tail is clipped in PyTorch too: within budget
    assert free.precision.verdict == "within budget" and free.verdict == "ok"
    # after a ReLU it is the signal: over budget, at the activation whose range clips it
    assert costly.precision.verdict == "over budget" and costly.drift_origin.module == "stem.1"
    stem = next(L for L in costly.layers if L.module == "stem.1")
    assert stem.budget.over and stem.local.max_rel.worst > 10 * stem.budget.own_budget
    assert out_rel(costly) > 3 * out_rel(free)


def test_a_coarse_static_scale_is_held_to_its_own_step(tmp_path):
    """Calibrated on inputs 10x wider: every static scale is ~10x what the checked samples use, and
    the error with it; the budget follows the file's scale, not an assumed 2/255 of the range.
    On small_cnn, whose activations have no heavy tail: tail_relu's x12 channel, rounded at stem's
    per-tensor scale, is charged to its reader b1 (the rounding of a dequantized value belongs to
    the layer that reads it), which puts even its finely calibrated file over at b1.0."""
    needs("onnxruntime.quantization")
    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    name = onnx.load(str(raw)).graph.input[0].name
    fine = int8_qdq(raw, tmp_path / "fine.onnx", feeds_of("img32", name), n=SAMPLES, reduce_range=True)
    coarse = int8_qdq(raw, tmp_path / "coarse.onnx", feeds_of("img32_wide", name), n=SAMPLES, reduce_range=True)
    _, r_fine = run("small_cnn", fine)
    _, r_coarse = run("small_cnn", coarse)
    assert r_fine.precision.verdict == "within budget"
    assert r_coarse.precision.verdict == "within budget" and r_coarse.verdict == "ok"
    assert out_rel(r_coarse) > 2 * out_rel(r_fine)        # the coarse file really is less precise ...
    assert r_coarse.precision.output_budget > 2 * r_fine.precision.output_budget   # ... and budgeted so
    # the input quantizer's step is 1 / the largest level sample 0 reaches (~255 / 10 when coarse)
    assert 1 / 256 <= input_step("small_cnn", fine) <= 1 / 100
    assert 1 / 40 <= input_step("small_cnn", coarse) <= 1 / 12


def prepared(fn: str, path):
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    return prepare(Config(model=local_spec(fn), inputs=local_spec("img32"), onnx=str(path), samples=1))


def input_step(fn: str, path) -> float:
    pr = prepared(fn, path)
    idx = pr.index
    steps = [p.act_step for k, p in pr.precision.nodes.items()
             if idx.nodes[k].op_type == "QuantizeLinear" and idx.nodes[k].inputs[0] in idx.graph_inputs]
    assert len(steps) == 1, steps
    return steps[0]


def test_dynamic_quantizer_step_is_the_kernels_scale_from_the_tensors_min_max(tmp_path):
    """DynamicQuantizeLinear: scale = (max(x, 0) - min(x, 0)) / 255 of the tensor it quantizes; the
    relative step is that over max|x| (1/255 for a one-signed tensor, up to 2/255 for a symmetric one)."""
    needs("onnxruntime.quantization")
    import torch

    from tests.deploy.precision_models import img32

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    q = int8_dynamic(raw, tmp_path / "dyn.onnx", reduce_range=True)
    pr = prepared("small_cnn", q)
    idx = pr.index
    steps = {idx.nodes[k].inputs[0]: p.act_step for k, p in pr.precision.nodes.items()
             if idx.nodes[k].op_type == "DynamicQuantizeLinear"}
    assert steps
    torch.manual_seed(0)
    x = img32()
    graph_in = idx.graph_inputs[0]
    if graph_in in steps:          # the model input: its range is the sample's own
        t = x.numpy()
        want = (max(t.max(), 0) - min(t.min(), 0)) / 255 / np.abs(t).max()
        assert steps[graph_in] == pytest.approx(want, rel=0.02)
    # post-ReLU values are one-signed: 1/255, half the assumed 2/255
    relu_steps = [s for v, s in steps.items() if "Relu" in v]
    assert relu_steps and all(s == pytest.approx(1 / 255, rel=0.02) for s in relu_steps), steps
