"""float16 files converted without keep_io_types take float16 inputs: ONNX Runtime runs them, so
drifttui accepts them (before: exit 2, "input is float32 but the ONNX graph expects float16",
which no PyTorch float32 model could satisfy). Each sample is rounded to float16 once and both
models get the same values; a genuine drift is still found."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, local_spec


def _fp16_noio(src, dst):
    from onnxruntime.transformers.float16 import convert_float_to_float16

    onnx.save(convert_float_to_float16(onnx.load(str(src)), keep_io_types=False), str(dst))
    return dst


@pytest.fixture(scope="module", params=[("small_cnn", "img32", "dynamo"), ("small_tf", "seq8", "torchscript")])
def noio(request, tmp_path_factory):
    needs("onnxruntime.transformers.float16")
    fn, inputs, exporter = request.param
    d = tmp_path_factory.mktemp(f"fp16-noio-{fn}")
    raw = export_local(fn, inputs, exporter, d / "raw")
    path = _fp16_noio(raw, d / "noio.onnx")
    assert onnx.load(str(path)).graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    return fn, inputs, path


def _run(fn, inputs, path, **kw):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec(fn), inputs=local_spec(inputs) if inputs else None, onnx=str(path),
                           samples=3, **kw)).result


def test_a_file_with_float16_inputs_is_accepted_and_within_budget(noio):
    fn, inputs, path = noio
    r = _run(fn, inputs, path)
    assert r.precision is not None and r.precision.format == "float16"
    assert r.precision.verdict == "within budget" and r.verdict == "ok"
    assert any("takes float16 inputs" in n and "rounded to float16 once" in n for n in r.notes), r.notes
    # the inputs' rounding is not counted: the first layers' own errors are float16 arithmetic only
    assert all(L.budget is None or not L.budget.over for L in r.layers)


def test_without_inputs_the_samples_are_drawn_in_float32_and_rounded(noio):
    fn, _, path = noio
    r = _run(fn, None, path)
    assert r.precision.verdict == "within budget" and r.verdict == "ok"


def test_a_float32_sample_float16_cannot_hold_is_refused_not_truncated():
    """Only a sample rounded for the file is narrowed: anything else is the clear error it was."""
    from drifttui.core.model.inputs import onnx_feeds
    from drifttui.errors import InputError

    x = torch.tensor([[1.0, 1.0 + 2 ** -20]])
    with pytest.raises(InputError, match="expects float16"):
        onnx_feeds(((x,), {}), ["x"], {"x": "float16"})
    fed = onnx_feeds(((x.half().float(),), {}), ["x"], {"x": "float16"})["x"]
    assert fed.dtype == np.float16 and np.array_equal(fed.astype(np.float32), x.half().float().numpy())


def test_a_wrong_epsilon_in_a_float16_input_file_is_still_the_origin(tmp_path):
    """A LayerNorm epsilon of 0.5 in the float16 transformer (inputs float16): that norm is the origin."""
    needs("onnxruntime.transformers.float16")
    raw = export_local("small_tf", "seq8", "torchscript", tmp_path / "raw")
    m = onnx.load(str(raw))
    norm = next(n for n in m.graph.node if n.op_type == "LayerNormalization" and "layers.1/norm1" in n.name)
    for a in norm.attribute:
        if a.name == "epsilon":
            a.f = 0.5
    onnx.save(m, str(tmp_path / "bad.onnx"))
    path = _fp16_noio(tmp_path / "bad.onnx", tmp_path / "bad_noio.onnx")
    r = _run("small_tf", "seq8", path)
    assert r.drift_origin is not None and r.drift_origin.module == "layers.1.norm1", r.drift_origin
