"""Capture details on tiny models: clones, repeated calls, tuples, functional ops, external data."""
import numpy as np
import pytest
import torch

from tests.conftest import model_spec


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_inplace_relu_after_batchnorm_is_not_drift(run_cache, exporter):
    r = run_cache(model=model_spec("bn_inplace"), inputs="shape:1x3x16x16", exporter=exporter)
    bn = next(L for L in r.layers if L.module == "bn")
    # without a clone at hook time the BN output would be the post-ReLU tensor: error ~ |negative values|
    assert bn.status == "ok"
    assert bn.metrics.max_abs.worst < 1e-4
    assert bn.local is not None and bn.local.max_abs.worst < 1e-4
    assert r.verdict == "ok"


def test_clone_matters_for_the_store():
    """The store clones at hook time: the kept tensor does not see later in-place ops."""
    from drifttui.core.runtime.torch_hooks import Hooks, TensorStore
    from tests.models import bn_inplace

    m = bn_inplace()
    hooks = Hooks(m)
    x = torch.randn(1, 3, 16, 16)
    with hooks.installed():
        hooks.begin(None, tracing=True)
        m(x)
        bn_idx = next(c.index for c in hooks.calls if c.module == "bn")
        store = TensorStore({bn_idx: [0]}, {})
        hooks.begin(store)
        with torch.no_grad():
            m(x)
    kept = store.out[(bn_idx, 0)]
    expected = m.bn(m.conv(x)).detach()
    assert torch.allclose(kept, expected)
    assert (kept < 0).any(), "a post-ReLU tensor has no negative values"


def test_shared_store_names_what_an_inplace_op_changed_and_keeps_the_rest_uncopied():
    """The per-layer pass keeps values as they lie (no copy) and clones only what an in-place op
    changes after its hook: the BN output that ReLU(inplace=True) overwrites is named by
    changed(), and kept as a clone once it is in ``always``; the conv output is never copied."""
    from drifttui.core.runtime.torch_hooks import Hooks, TensorStore
    from tests.models import bn_inplace

    m = bn_inplace()
    hooks = Hooks(m)
    x = torch.randn(1, 3, 16, 16)
    with hooks.installed():
        hooks.begin(None, tracing=True)
        m(x)
        idx = {c.module: c.index for c in hooks.calls}
        want = {idx["bn"]: [0], idx["conv"]: [0]}
        store = TensorStore(want, {}, share=True)
        hooks.begin(store)
        with torch.no_grad():
            m(x)
        assert store.changed() == {("out", idx["bn"], 0)}
        retake = TensorStore(want, {}, share=True, always=store.changed())
        hooks.begin(retake)
        with torch.no_grad():
            m(x)
    assert not retake.changed()
    expected = m.bn(m.conv(x)).detach()
    assert torch.allclose(retake.out[(idx["bn"], 0)], expected) and (retake.out[(idx["bn"], 0)] < 0).any()
    conv = retake.out[(idx["conv"], 0)]
    assert torch.allclose(conv, m.conv(x))
    assert ("out", idx["conv"], 0) in retake._versions          # kept as it lay: not copied
    assert ("out", idx["bn"], 0) not in retake._versions        # cloned at its hook


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_twice_tuple_and_functional_ops(run_cache, exporter):
    r = run_cache(model=model_spec("twice"), inputs="shape:2x8", exporter=exporter)
    acts = [L for L in r.layers if L.module == "act"]
    assert [L.call for L in acts] == [0, 1]
    assert all(L.status == "ok" for L in acts)
    split = next(L for L in r.layers if L.module == "split")
    assert len(split.output_shapes) == 2
    assert split.status == "ok" and len(split.onnx_values) == 2
    fc2 = [L for L in r.layers if L.module == "fc2"]
    assert len(fc2) == 2
    assert r.verdict == "ok"
    assert len(r.outputs) == 2


def test_external_data_onnx_file(tmp_path):
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once
    from tests.models import bn_inplace

    m = bn_inplace()
    x = torch.randn(1, 3, 16, 16)
    path = tmp_path / "deployed.onnx"
    torch.onnx.export(m, (x,), str(path), dynamo=True, external_data=True)
    assert (tmp_path / "deployed.onnx.data").exists()
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    r = run_once(Config(model=model_spec("bn_inplace"), onnx=str(path), samples=2)).result
    assert r.verdict == "ok"
    assert r.coverage.localized and r.coverage.mapped >= 3
    after = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert before == after, "drifttui must not write next to the user's files"


def test_torchscript_model_degrades_to_outputs(tmp_path):
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once
    from tests.models import twice

    m = twice()
    x = torch.randn(2, 8)
    ts = torch.jit.trace(m, (x,), strict=False)
    ts_path = tmp_path / "model.pt"
    ts.save(str(ts_path))
    onnx_path = tmp_path / "model.onnx"
    torch.onnx.export(m, (x,), str(onnx_path), dynamo=True)
    r = run_once(Config(model=str(ts_path), onnx=str(onnx_path), samples=2)).result
    assert r.verdict == "ok"
    assert not r.coverage.localized
    assert "TorchScript" in r.coverage.reason
    assert any("localisation was not possible" in n for n in r.notes)


def test_exported_program_model_keeps_module_hierarchy(tmp_path):
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once
    from tests.models import bn_inplace

    m = bn_inplace()
    x = torch.randn(1, 3, 16, 16)
    ep = torch.export.export(m, (x,))
    p = tmp_path / "m.pt2"
    torch.export.save(ep, str(p))
    # a .pt2 this test made itself: trusted (loading one runs code from the file)
    r = run_once(Config(model=str(p), inputs="shape:1x3x16x16", samples=2, trust_model_file=True)).result
    assert r.verdict == "ok"
    assert {L.module for L in r.layers} >= {"", "conv", "bn", "relu", "conv2"}


def test_injected_functional_drift_is_owned_by_the_container(tmp_path):
    """A drift in a functional op between children: the container owns it, not a child."""
    import onnx

    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once
    from tests.models import scaled

    m = scaled()
    x = torch.randn(2, 8)
    path = tmp_path / "m.onnx"
    torch.onnx.export(m, (x,), str(path), dynamo=True, external_data=False)
    proto = onnx.load(str(path))
    mul = next(n for n in proto.graph.node if n.op_type == "Mul")
    # change the constant 4.0 into 4.01 (a baked constant that drifted)
    from onnx import numpy_helper
    inits = {t.name: t for t in proto.graph.initializer}
    name = next(i for i in mul.input if i in inits)
    arr = numpy_helper.to_array(inits[name]).astype(np.float32) * 1.0025
    inits[name].CopyFrom(numpy_helper.from_array(arr, name))
    onnx.save(proto, str(path))
    r = run_once(Config(model=model_spec("scaled"), onnx=str(path), samples=3)).result
    assert r.verdict == "drift"
    assert r.drift_origin.module == ""          # the root's own Mul
    fc = next(L for L in r.layers if L.module == "fc")
    assert fc.status == "ok"
    out = next(L for L in r.layers if L.module == "out")
    assert out.status == "inherited"
