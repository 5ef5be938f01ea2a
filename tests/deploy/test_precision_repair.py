"""`drifttui repair` on an over-budget int8 file: a verified keep-in-float32 list, printed in the form
onnxruntime.quantization takes, that brings the file within budget when the user quantizes again.

small_cnn quantized without reduce_range is over budget only where ORT's u8s8 kernel saturates (x86
without VNNI: fc's MatMulInteger, issue 36); on a VNNI or ARM CPU it is within budget.  Each test
asserts what drifttui must show on the CPU it runs on (runtime/cpu.py).  The keep-list repair on a
file over budget on every CPU is test_precision_exclusions.py's (heavy_cnn, exact U8U8 products)."""
from __future__ import annotations

import dataclasses

import onnx

from drifttui.core.runtime.cpu import detect
from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, int8_dynamic, local_spec

SAMPLES = 4


def check(path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec("small_cnn"), inputs=local_spec("img32"), onnx=str(path),
                           samples=SAMPLES)).result


def test_repair_keep_list_is_verified_and_works_with_the_users_quantizer(tmp_path, capsys):
    needs("onnxruntime.quantization")
    from drifttui.cli import main

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    plain = int8_dynamic(raw, tmp_path / "dynamic.onnx")      # no reduce_range
    before = check(plain)
    if detect().saturates is False or (detect().saturates is None and before.verdict == "ok"):
        # exact u8s8 products (VNNI, ARM): within budget, nothing to repair
        assert before.precision.verdict == "within budget" and before.verdict == "ok"
        return
    assert before.precision.verdict == "over budget"
    fixed = tmp_path / "kept.onnx"
    code = main(["repair", local_spec("small_cnn"), "--onnx", str(plain), "--inputs", local_spec("img32"),
                 "--samples", str(SAMPLES), "--out", str(fixed)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verified" in out and "check on the patched copy: within budget" in out
    line = next(ln for ln in out.splitlines() if "nodes_to_exclude=" in ln)
    names = eval(line.split("nodes_to_exclude=", 1)[1])      # the list drifttui printed  # noqa: S307
    assert names and len(names) < sum(1 for n in onnx.load(str(raw)).graph.node if n.op_type in ("Conv", "Gemm"))
    assert check(fixed).precision.verdict == "within budget"
    # the user's own converter with that list: within budget too
    redo = int8_dynamic(raw, tmp_path / "redo.onnx", nodes_to_exclude=names)
    after = check(redo)
    assert after.precision.verdict == "within budget" and after.verdict == "ok"
    assert max(o.metrics.max_abs.worst for o in after.outputs) < max(o.metrics.max_abs.worst for o in before.outputs)


def test_repair_does_not_keep_a_genuine_drift_in_float32(tmp_path, capsys):
    """A wrong weight in a quantized file is over budget, but keeping it in float32 changes nothing:
    repair says so and goes on to the verified patches (no keep-list)."""
    needs("onnxruntime.quantization")
    import numpy as np
    from onnx import numpy_helper

    from drifttui.cli import main

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    q = int8_dynamic(raw, tmp_path / "q.onnx", reduce_range=True)
    m = onnx.load(str(q))
    t = next(t for t in m.graph.initializer if t.name.startswith("b2.0.weight") and t.data_type == 3 and len(t.dims) == 4)
    a = numpy_helper.to_array(t).copy()
    a[:16] = -a[:16]
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(a), t.name))
    bad = tmp_path / "bad.onnx"
    onnx.save(m, str(bad))
    main(["repair", local_spec("small_cnn"), "--onnx", str(bad), "--inputs", local_spec("img32"),
          "--samples", "2", "--out", str(tmp_path / "fixed.onnx")])
    out = capsys.readouterr().out
    assert "a genuine drift in the int8 file at its origin b2.0, not its precision" in out
    assert "nodes_to_exclude" not in out


def test_qdq_keep_list_is_verified_and_works_with_quantize_static(tmp_path, capsys):
    """The same on a static QDQ file (calibrated, S8S8, no reduce_range).  On x86 without VNNI, ORT's
    fused QLinearConv / QGemm saturate in every layer (proven: the units recomputed exactly): no
    keep-list of some layers brings the file within budget, and repair writes the reduce_range copy
    (7-bit weights), verified within budget, as the user's quantize_static(..., reduce_range=True) is.
    Elsewhere: the printed nodes_to_exclude, given to the user's own quantize_static with the same
    calibration, gives a file within budget."""
    needs("onnxruntime.quantization")
    from drifttui.cli import main
    from tests.deploy.precision_models import feeds_of, int8_qdq

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    feeds = feeds_of("img32", onnx.load(str(raw)).graph.input[0].name)
    plain = int8_qdq(raw, tmp_path / "qdq.onnx", feeds, n=SAMPLES)
    before = check(plain)
    assert before.precision is not None and "int8 QDQ" in " ".join(before.precision.schemes)
    if before.precision.verdict == "within budget":        # exact products: nothing to repair
        assert detect().saturates is not True
        return
    fixed = tmp_path / "kept.onnx"
    code = main(["repair", local_spec("small_cnn"), "--onnx", str(plain), "--inputs", local_spec("img32"),
                 "--samples", str(SAMPLES), "--out", str(fixed)])
    out = capsys.readouterr().out
    assert code == 0, out
    if "nodes_to_exclude=" not in out:          # saturation: the reduce_range copy is the repair
        assert detect().saturates is not False, out
        assert "the u8s8 kernel saturates without AVX-512 VNNI" in out and "QDQ Conv" in out, out
        assert "check on the patched copy: within budget" in out and "reduce_range=True" in out, out
        assert check(fixed).precision.verdict == "within budget"
        rr = check(int8_qdq(raw, tmp_path / "rr.onnx", feeds, n=SAMPLES, reduce_range=True))
        assert rr.precision.verdict == "within budget" and rr.verdict == "ok"
        return
    assert "verified" in out and "check on the patched copy: within budget" in out
    line = next(ln for ln in out.splitlines() if "nodes_to_exclude=" in ln)
    names = eval(line.split("nodes_to_exclude=", 1)[1])      # the list drifttui printed  # noqa: S307
    redo = int8_qdq(raw, tmp_path / "redo.onnx", feeds, n=SAMPLES, nodes_to_exclude=names)
    after = check(redo)
    assert after.precision.verdict == "within budget" and after.verdict == "ok"


def test_step_4_on_an_int8_file_is_the_keep_list_and_the_tui_shows_it(tmp_path):
    """Step 4 on a reduced-precision file is the precision bisect: on the over-budget file the same
    verified keep-list `repair` finds (the step writes no file), shown in the TUI's step view in the
    quantizer's form; on a file within budget it passes with nothing to keep."""
    needs("onnxruntime.quantization")
    from rich.console import Console

    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from drifttui.tui.step_view import render_step

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    plain = int8_dynamic(raw, tmp_path / "dynamic.onnx")
    engine = Pipeline()
    cfg = Config(model=local_spec("small_cnn"), inputs=local_spec("img32"), onnx=str(plain), samples=SAMPLES)
    result = engine.run(cfg).result
    fine = int8_dynamic(raw, tmp_path / "rr.onnx", reduce_range=True)
    if detect().saturates is False or (detect().saturates is None and result.verdict == "ok"):
        _step_4_passes(engine, result)        # exact u8s8 products (VNNI, ARM): within budget
        _step_4_passes(engine, engine.run(dataclasses.replace(cfg, onnx=str(fine))).result)
        return
    # x86 without VNNI: the headline cause is the kernel's saturation (fc's MatMulInteger), verified by
    # the reduce_range copy; no mistranslation "verified" by a float32 re-export
    findings = engine.explain(result).result.findings
    head = findings[0]
    assert head.check == "precision" and head.kind == "saturation" and head.module == result.drift_origin.module
    assert "nodes_to_exclude=" in head.fix and "reduce_range=True" in head.fix and head.verified is True
    assert not any(f.verified for f in findings[1:])
    before = set(tmp_path.rglob("*"))
    step = engine.step(4, result)
    assert set(tmp_path.rglob("*")) == before                 # no file written next to the user's
    assert step.step == 4 and step.title.startswith("Precision bisect") and step.verdict == "fail"
    kept = step.evidence["keep in float32"]
    assert kept and "within its budget" in step.summary and "verified" in step.summary
    assert step.evidence["after"]["verdict"] == "within budget"
    assert [result.layers[i].module for i in step.layers] == kept
    names = step.evidence["nodes (your float model)"]
    assert "nodes_to_exclude=" in step.suggestion and all(n in step.suggestion for n in names)
    console = Console(width=100, record=True)
    console.print(render_step(step, result))
    shown = console.export_text()
    assert "Precision bisect" in shown and "nodes_to_exclude" in shown and kept[0] in shown
    # the user's converter with the step's list: within budget
    redo = int8_dynamic(raw, tmp_path / "redo.onnx", nodes_to_exclude=names)
    assert check(redo).precision.verdict == "within budget"
    # within budget: the step passes, nothing to keep
    _step_4_passes(engine, engine.run(dataclasses.replace(cfg, onnx=str(fine))).result)


def _step_4_passes(engine, ok):
    assert ok.precision.verdict == "within budget" and ok.verdict == "ok"
    step = engine.step(4, ok)
    assert step.verdict == "pass" and "no layer needs float32" in step.summary and step.layers == []


def test_repair_falls_through_to_the_origins_verified_patch_when_no_keep_list_or_reduce_range_works(tmp_path):
    """An int8 file over budget for a reason no precision explains that decide cannot tell from a precision loss (its
    output is -inf, so no share of the output error is measured): the keep-list search runs and finds no list, the
    reduce_range copy does not apply (no saturation: the weights are 7-bit already), and the origin's verified
    rewrite (``Log(Sigmoid)`` as ``-Softplus(-x)``) is what repairs the file (``Pipeline.repair``'s last step)."""
    needs("onnxruntime.quantization")
    import onnx as _onnx

    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.deploy.precision_models import feeds_of, int8_qdq

    raw = export_local("logsig_head", "rows16", "torchscript", tmp_path / "raw")
    name = _onnx.load(str(raw)).graph.input[0].name
    q = int8_qdq(raw, tmp_path / "q.onnx", feeds_of("rows16", name), n=8, reduce_range=True,
                 op_types_to_quantize=["MatMul", "Gemm"])
    engine = Pipeline()
    before = engine.run(Config(model=local_spec("logsig_head"), inputs=local_spec("rows16"), onnx=str(q),
                               samples=3)).result
    assert (before.verdict, before.precision.verdict, before.precision.cause) == ("drift", "over budget", "precision")
    fixed = engine.repair(before)
    assert fixed.keep is not None and not fixed.keep.verified and not fixed.keep.genuine and fixed.keep.checks >= 1
    assert fixed.kind == "patches" and fixed.after.verdict == "ok", (fixed.kind, fixed.reason)
    head = fixed.result.findings[0]
    assert head.verified and head.patch["rewrite"] == "workaround" and head.patch["form"] == "log_sigmoid"
    assert sum(n.op_type == "DequantizeLinear" for n in fixed.model.graph.node) >= 2     # still the int8 file
