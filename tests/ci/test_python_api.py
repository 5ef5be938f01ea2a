"""drifttui.check / diagnose / assert_no_drift and the drift_check fixture, on real models."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
import pytest
import torch

import drifttui
from drifttui.core.model import memory
from drifttui.core.model.examples import get_example
from drifttui.report import json_report
from tests.ci import classifier

ROOT = Path(__file__).resolve().parents[2]


def _same(api, cli):
    assert api.verdict == cli.verdict
    assert [(L.module, L.call, L.status) for L in api.layers] == [(L.module, L.call, L.status) for L in cli.layers]
    if cli.drift_origin is None:
        assert api.drift_origin is None
    else:
        a, c = api.drift_origin, cli.drift_origin
        assert (a.module, a.cls, a.op_types, a.worst_sample) == (c.module, c.cls, c.op_types, c.worst_sample)
        assert math.isclose(a.max_abs, c.max_abs, rel_tol=1e-4)
    for a, c in zip(api.layers, cli.layers):
        if c.metrics is not None:
            assert math.isclose(a.metrics.max_abs.worst, c.metrics.max_abs.worst, rel_tol=1e-3, abs_tol=1e-6)
    assert [o.name for o in api.outputs] == [o.name for o in cli.outputs]
    assert api.samples == cli.samples


def test_api_with_a_model_object_matches_the_cli_on_a_drifted_example(unet_drift, tmp_path):
    ex = get_example("unet-resize")
    model = ex.build_model()
    path = ex.export(model, (ex.make_inputs(0), {}), "dynamo", tmp_path)
    proto = onnx.load(str(path))
    api = drifttui.check(model, proto, inputs=lambda i: ex.make_inputs(i), samples=2)
    cli = json_report.read(str(unet_drift.files["json"]))
    _same(api, cli)
    assert api.drift_origin.module == "up1"


def test_api_with_an_example_spec_matches_the_cli_on_a_clean_example(unet_clean):
    api = drifttui.check("example:unet", samples=2)
    _same(api, json_report.read(str(unet_clean.files["json"])))
    data = json.loads(api.to_json())
    assert data["verdict"] == "ok" and data["samples"] == 2
    assert drifttui.Result.from_dict(data).to_dict() == api.to_dict()


def test_assert_no_drift_names_the_origin_its_errors_and_the_cause(variants):
    model = classifier.build()
    with pytest.raises(AssertionError) as info:
        drifttui.assert_no_drift(model, variants["flip"], inputs=lambda i: torch.randn(32, 16), samples=3)
    message = str(info.value)
    assert "origin: fc2 (Linear; ONNX Gemm" in message and "max |d|" in message and "own error" in message
    assert "cause: weights at fc2: initializer fc2.bias differs from" in message and "verified" in message
    assert "fix: " in message


def test_assert_no_drift_returns_the_result_when_the_gate_passes(variants):
    x = classifier.inputs()
    result = drifttui.assert_no_drift(classifier.build(), variants["clean"], inputs=x, min_top1=0.997)
    assert result.verdict == "ok" and result.samples == 1
    assert any("inputs= gave 1 sample(s) where samples=100 was asked" in n for n in result.notes)
    result = drifttui.assert_no_drift(classifier.build(), variants["flip"], inputs=x, fail_on="never", min_top1=0)
    assert result.verdict == "drift"
    with pytest.raises(AssertionError, match="error finding: weights at fc2"):
        drifttui.assert_no_drift(classifier.build(), variants["stale"], inputs=x, fail_on="error")


def test_inputs_forms_samples_and_no_side_effects(variants, capsys):
    model = classifier.build().train()
    x = torch.randn(32, 16)
    one = drifttui.check(model, variants["clean"], inputs=x, samples=5)
    listed = drifttui.check(model, variants["clean"], inputs=[torch.randn(32, 16) for _ in range(3)], samples=5)
    gen = drifttui.check(model, variants["clean"], inputs=(torch.randn(32, 16) for _ in range(10)), samples=4)
    called = []
    rng_before = torch.random.get_rng_state()
    fn = drifttui.check(model, variants["clean"], inputs=lambda i: called.append(i) or torch.randn(32, 16),
                        samples=3)
    assert torch.equal(torch.random.get_rng_state(), rng_before)             # the caller's RNG untouched
    tup = drifttui.check(model, variants["clean"], inputs=(x,), samples=2)
    named = drifttui.check(model, variants["clean"], inputs={"x": x}, samples=2)
    spec = drifttui.check(model, variants["clean"], inputs="shape:32x16", samples=2)
    assert [r.samples for r in (one, listed, gen, fn, tup, named, spec)] == [1, 3, 4, 3, 1, 1, 2]
    assert all(r.verdict == "ok" for r in (one, listed, gen, fn, tup, named, spec))
    assert sorted(set(called)) == [0, 1, 2]
    assert model.training and all(m.training for m in model.modules())      # modes restored
    assert memory._MODELS == {} and memory._SAMPLES == {}                   # nothing kept after the call
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""                                  # no printing


def test_export_when_onnx_is_omitted_and_progress_callback(variants):
    seen = []
    result = drifttui.check(classifier.build(), inputs=classifier.inputs(), progress=seen.append)
    assert result.verdict == "ok" and result.environment.exporter == "dynamo"
    assert {p.stage for p in seen} >= {"load", "export", "map", "done"}


def test_bad_arguments_raise_one_line_errors(variants):
    with pytest.raises(drifttui.InputError, match="model= is a int"):
        drifttui.check(42, variants["clean"], inputs=classifier.inputs())
    with pytest.raises(drifttui.InputError, match="inputs= is needed"):
        drifttui.check(classifier.build())
    with pytest.raises(drifttui.InputError, match="onnx= is a dict"):
        drifttui.check(classifier.build(), {}, inputs=classifier.inputs())
    with pytest.raises(drifttui.InputError, match="gave no samples"):
        drifttui.check(classifier.build(), variants["clean"], inputs=[])
    with pytest.raises(ValueError, match="fail_on='sometimes'"):
        drifttui.assert_no_drift(classifier.build(), variants["clean"], inputs=classifier.inputs(), fail_on="sometimes")
    with pytest.raises(TypeError, match="unexpected keyword argument.*smaples"):
        drifttui.assert_no_drift(classifier.build(), variants["clean"], inputs=classifier.inputs(), smaples=3)
    assert memory._MODELS == {} and memory._SAMPLES == {}


def test_diagnose_fills_steps_and_findings(variants):
    result = drifttui.diagnose(classifier.build(), variants["flip"], inputs=lambda i: torch.randn(32, 16),
                               samples=2, step=1)
    assert [s.step for s in result.steps] == [1]
    assert result.headline is not None and result.headline.module == "fc2"


def test_import_drifttui_is_cheap():
    code = "import sys, drifttui; assert drifttui.check; print(sorted(m for m in ('torch', 'onnx', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code.replace("assert drifttui.check; ", "")], capture_output=True,
                         text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == "[]"


# --- the drift_check fixture -------------------------------------------------------------------
def test_drift_check_fixture_passes_a_clean_export(drift_check, variants):
    result = drift_check(classifier.build(), variants["clean"], classifier.inputs(), samples=2)
    assert result.verdict == "ok"


def test_drift_check_fixture_fails_a_drifting_export(drift_check, variants):
    with pytest.raises(AssertionError, match="origin: fc1 "):
        drift_check(classifier.build(), variants["other"], classifier.inputs())


def test_the_plugin_is_declared_and_works_in_a_user_test_run(tmp_path, variants):
    import tomllib

    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert entry == {"drifttui": "drifttui.testing.pytest_plugin"}
    (tmp_path / "test_user.py").write_text(textwrap.dedent(f"""
        import sys
        import torch

        sys.path.insert(0, {str(ROOT)!r})
        from tests.ci.classifier import build

        def test_clean(drift_check):
            drift_check(build(), {variants['clean']!r}, inputs=torch.randn(32, 16))

        def test_deployed(drift_check):
            drift_check(build(), {variants['other']!r}, torch.randn(32, 16))
    """))
    # autoload off: the plugin is named explicitly, whatever this venv has installed
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "drifttui.testing.pytest_plugin", "--drifttui-samples", "2", "test_user.py"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout
    assert "AssertionError: drifttui: the gate fails" in run.stdout and "origin: fc1 (Linear; ONNX Gemm" in run.stdout
