import pytest

from tests.conftest import ROOT

DEEP = ROOT / "tests" / "capture" / "deep.py"
INPUTS = "shape:8x64"


@pytest.fixture(scope="session")
def deep_onnx(tmp_path_factory):
    """The deep model's export, plus a copy with one weight nudged (a known drift origin: module "50")."""
    import onnx
    import torch
    from onnx import numpy_helper

    from drifttui.core.model.export import export_model
    from tests.capture.deep import deep_mlp

    d = tmp_path_factory.mktemp("deep")
    path = export_model(deep_mlp(), (torch.randn(8, 64),), {}, "dynamo", d)
    proto = onnx.load(str(path))
    hits = [t for t in proto.graph.initializer if t.name.startswith("50.") and t.name.endswith("weight")]
    assert hits, [t.name for t in proto.graph.initializer][:10]
    arr = numpy_helper.to_array(hits[0]).copy()
    arr[:, :8] *= 1.01
    hits[0].CopyFrom(numpy_helper.from_array(arr, hits[0].name))
    drifted = d / "drifted.onnx"
    onnx.save(proto, str(drifted))
    return path, drifted


@pytest.fixture(scope="session")
def deep_run():
    """Runs of the deep model, cached per configuration."""
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once

    cache = {}

    def run(**kw):
        key = tuple(sorted((k, str(v)) for k, v in kw.items()))
        if key not in cache:
            kw.setdefault("samples", 3)
            cache[key] = run_once(Config(model=f"{DEEP}:deep_mlp", inputs=INPUTS, **kw)).result
        return cache[key]

    return run


@pytest.fixture(autouse=True)
def intermediates_only_budget(monkeypatch):
    """These tests split tiny models into windows with a tiny --max-memory: with no fixed costs
    counted (``budget.fixed_bytes`` 0) the limit is all for one sample's intermediates, as the
    windows need.  How the fixed costs are counted is tested in tests/capture/test_budget.py."""
    from drifttui.core.prepare import budget

    monkeypatch.setattr(budget, "fixed_bytes", lambda index: 0)
