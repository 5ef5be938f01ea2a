"""``repro`` writes a test case that ONNX Runtime alone reproduces; ``repair`` makes ``check`` pass;
without the patch step nothing is verified."""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from drifttui.core.explain.causes.deliver.repair import repair
from drifttui.core.explain.causes.deliver.repro import write_case

REPAIRABLE = [("multi", "dynamo", "resize"), ("multi", "torchscript", "pool"), ("multi", "dynamo", "eps"),
              ("multi", "torchscript", "leaky"), ("multi", "dynamo", "gelu"), ("multi", "torchscript", "gamma"),
              ("multi", "dynamo", "weights"), ("multi", "dynamo", "half"), ("intdiv", "torchscript", "clean"),
              ("seq", "torchscript", "clean"), ("multi", "torchscript10", "clean"), ("clip", "torchscript", "stale")]


@pytest.mark.parametrize("model,exporter,variant", REPAIRABLE)
def test_repair_makes_check_pass(run, model, exporter, variant):
    engine, result, exp = run(model, exporter, variant)
    assert result.verdict == "drift"
    fixed = repair(engine.context(result).prepared.index.model, exp)
    assert fixed.model is not None and fixed.applied, exp.findings[0]
    after = engine.recheck(result.config, fixed.model)
    assert after.verdict == "ok", [(L.module, L.status) for L in after.layers if L.status != "ok"][:5]


def _ort_alone(folder: Path) -> float:
    sess = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    load = lambda f: onnx.load_tensor(f)  # noqa: E731
    ins = {t.name: numpy_helper.to_array(t) for t in map(load, sorted(glob.glob(str(folder / "test_data_set_0/input_*.pb"))))}
    outs = [load(f) for f in sorted(glob.glob(str(folder / "test_data_set_0/output_*.pb")))]
    got = sess.run([t.name for t in outs], ins)
    return max(float(np.abs(g.astype(np.float64) - numpy_helper.to_array(t)).max()) for g, t in zip(got, outs))


@pytest.mark.parametrize("model,exporter,variant", [("multi", "dynamo", "resize"), ("multi", "torchscript", "eps"),
                                                    ("intdiv", "torchscript", "clean")])
def test_repro_reproduces_in_onnxruntime_alone(run, tmp_path, model, exporter, variant):
    _, result, exp = run(model, exporter, variant)
    out = tmp_path / "case"
    ev = write_case(exp.case, str(out))
    assert ev.fails
    assert (out / "README.md").read_text().count("onnxruntime") >= 1
    d = _ort_alone(out)
    assert d > result.tolerance.atol * 10
    assert d == pytest.approx(exp.loc.ort.max_abs, rel=1e-3)


def test_repro_outputs_are_the_torch_values(run, tmp_path):
    """The expected outputs are torch-side: the verified patch makes ORT match them."""
    _, _, exp = run("multi", "dynamo", "resize")
    from drifttui.core.explain.causes.locate.evaluate import run_ort
    from drifttui.core.onnx.edit.patches import apply

    patched = apply(exp.case.model, exp.verified[0].patch)
    got = run_ort(patched, exp.case.feeds, list(exp.case.expected))
    for name, want in exp.case.expected.items():
        np.testing.assert_allclose(got[name], want, atol=1e-4)


def test_without_the_patch_step_nothing_is_verified(run, monkeypatch):
    """Verification comes from running patches: skip that step and the headline is unverified."""
    import drifttui.core.explain.causes.verify as causes
    from drifttui.core.explain.checks import run_checks

    engine, result, _ = run("multi", "dynamo", "pool")
    ctx = engine.context(result)
    for k in [k for k in ctx.cache if k.startswith(("causes:explain", "causes:tried")) or k == "findings"]:
        del ctx.cache[k]
    monkeypatch.setattr(causes, "verify", lambda case, patches, cancel=None: [])
    exp = causes.verify_at_origin(ctx, run_checks(ctx, static_only=True), reexport=False)
    ctx.cache.clear()
    assert exp.findings[0].verified is not True
    assert not any(f.verified for f in exp.findings)
    assert repair(ctx.prepared.index.model, exp).model is None
