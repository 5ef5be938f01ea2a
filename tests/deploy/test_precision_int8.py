"""int8 files from onnxruntime.quantization (quantize_dynamic, quantize_static QDQ with a calibration
reader): detected and said, held to the int8 budget instead of float32's tolerance, and a genuine
drift (a wrong weight) still named at the layer that holds it."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, feeds_of, int8_dynamic, int8_qdq, local_spec

SAMPLES = 4


def run(fn: str, inputs: str, onnx_path, **kw):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec(fn), inputs=local_spec(inputs), onnx=str(onnx_path),
                           samples=kw.pop("samples", SAMPLES), **kw)).result


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    needs("onnxruntime.quantization")
    d = tmp_path_factory.mktemp("int8")
    raw = export_local("small_cnn", "img32", "torchscript", d / "raw")
    name = onnx.load(str(raw)).graph.input[0].name
    return {
        "raw": raw,
        # reduce_range: 7-bit weights, no U8S8 saturation on CPUs without VNNI (ORT's advice)
        "dynamic": int8_dynamic(raw, d / "dynamic.onnx", reduce_range=True),
        # calibrated on the samples the check draws (representative data); reduce_range as above (ORT's fused
        # QLinearConv at level all saturates without it here: the outputs then go over budget, said in a note)
        "qdq": int8_qdq(raw, d / "qdq.onnx", feeds_of("img32", name), n=SAMPLES, reduce_range=True),
    }


def wrong_weight(src, dst, weight_prefix: str):
    """A genuine drift in the quantized file: half of one layer's int8 weights negated."""
    m = onnx.load(str(src))
    hit = [t for t in m.graph.initializer if t.name.startswith(weight_prefix) and t.data_type in (2, 3) and len(t.dims) == 4]
    assert hit, [t.name for t in m.graph.initializer]
    t = hit[0]
    a = numpy_helper.to_array(t).copy()
    a[: a.shape[0] // 2] = -a[: a.shape[0] // 2]
    t.CopyFrom(numpy_helper.from_array(a, t.name))
    onnx.save(m, str(dst))
    return dst


def test_float32_file_says_float32_and_keeps_the_float32_rule(files):
    r = run("small_cnn", "img32", files["raw"])
    assert r.verdict == "ok" and r.precision is not None
    assert r.precision.format == "float32" and r.precision.verdict == "" and r.precision.reduced_nodes == 0
    assert all(L.budget is None for L in r.layers)


@pytest.mark.parametrize("kind, scheme, ops", [
    ("dynamic", "int8 dynamic", {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"}),
    ("qdq", "int8 QDQ", {"QuantizeLinear", "DequantizeLinear"}),
])
def test_clean_int8_file_is_detected_and_within_budget(files, kind, scheme, ops):
    r = run("small_cnn", "img32", files[kind])
    p = r.precision
    assert p is not None and p.format == "int8" and any(s.startswith(scheme) for s in p.schemes)
    assert ops <= set(p.evidence), p.evidence
    # a float model makes no fake-quantise call: none of the file's quantizers is taken as its own (core/prepare/qat.py)
    assert "own fake quantisation" not in p.summary, p.summary
    assert p.verdict == "within budget" and r.verdict == "ok", [(L.module, L.status, L.budget) for L in r.layers]
    # the float32 tolerance would have failed it: the int8 rounding is far above 1e-4
    assert max(o.metrics.max_rel.worst for o in r.outputs) > 1e-3
    quantized = [L for L in r.layers if L.budget is not None and L.budget.format == "int8"]
    assert {L.module for L in quantized} >= {"b1.0", "b2.0", "fc"}
    for L in quantized:
        assert L.budget.own_budget > 1e-3 and L.budget.own_loss_db is not None and 15 < L.budget.own_loss_db < 80


@pytest.mark.parametrize("kind", ["dynamic", "qdq"])
def test_wrong_weight_in_a_quantized_file_is_the_origin(files, kind, tmp_path):
    prefix = {"dynamic": "b2.0.weight", "qdq": "b2.0.weight"}[kind]
    bad = wrong_weight(files[kind], tmp_path / "bad.onnx", prefix)
    r = run("small_cnn", "img32", bad)
    assert r.verdict == "drift" and r.precision.verdict == "over budget"
    assert r.drift_origin is not None and r.drift_origin.module == "b2.0", \
        [(L.module, L.status) for L in r.layers if L.status in ("drift", "inherited")]
    over = [L.module for L in r.layers if L.budget is not None and L.budget.over]
    assert over == ["b2.0"]
    # measured: keeping b2.0 in float32 does not remove the output error (its weights are wrong, not rounded):
    # the share tells a genuine drift from a precision loss
    shares = {L.module: L.budget.share for L in r.layers if L.budget is not None and L.budget.share is not None}
    assert "b2.0" in shares and abs(shares["b2.0"]) < 0.1, shares
    if kind == "dynamic":           # ... so no finding calls it a precision loss
        from drifttui.core.pipeline import Pipeline

        engine = Pipeline()
        found = engine.explain(engine.run(r.config).result).result.findings
        assert not any(f.check == "precision" for f in found), [(f.check, f.message) for f in found]


def test_budget_applies_only_in_decide_and_the_gate_still_works(files, tmp_path):
    """The budget lives in decide: a re-decision at a looser tolerance only loosens; --fail-on never
    and --min-top1 keep their meaning on a reduced-precision file."""
    import dataclasses

    from drifttui.core.capture.stage import capture
    from drifttui.core.decide.stage import decide
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config
    from drifttui.report.gate import Gate, decide as gate

    bad = wrong_weight(files["dynamic"], tmp_path / "bad.onnx", "b2.0.weight")
    cfg = Config(model=local_spec("small_cnn"), inputs=local_spec("img32"), onnx=str(bad), samples=2)
    pr = prepare(cfg)
    cap = capture(pr, cfg)
    tight = decide(pr, cap, cfg)
    assert tight.precision.verdict == "over budget" and tight.drift_origin.module == "b2.0"
    assert gate(tight).exit_code == 1 and gate(tight, Gate(fail_on="never")).exit_code == 0
    loose = decide(pr, cap, dataclasses.replace(cfg, rtol=10.0, atol=10.0))
    assert loose.verdict == "ok" and loose.precision.verdict == "within budget"
    top1 = min(o.top1_agreement for o in tight.outputs if o.top1_agreement is not None)
    assert gate(loose, Gate(min_top1=1.0)).exit_code == (0 if top1 == 1.0 else 1)


def test_tui_renders_the_budget_the_engine_wrote(files, tmp_path):
    """The layer view shows the budget, own loss in dB, share and the engine's verdict (never re-derived)."""
    from rich.console import Console

    from drifttui.tui.layer_view import render_layer

    r = run("small_cnn", "img32", wrong_weight(files["dynamic"], tmp_path / "bad.onnx", "b2.0.weight"))
    console = Console(width=120, record=True)
    console.print(render_layer(r, next(L for L in r.layers if L.module == "b2.0")))
    console.print(render_layer(r, next(L for L in r.layers if L.module == "b1.0")))
    text = console.export_text()
    assert "int8 budget" in text and "own loss" in text and "dB" in text
    assert text.count("OVER BUDGET") == 1 and "within budget" in text


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_quantized_embedding_table_is_held_to_its_int8_budget(tmp_path, exporter):
    """quantize_dynamic quantizes an embedding table (Gather on int8 rows, then DequantizeLinear):
    the rows carry the table's rounding, which is the embedding's budget (it was held to float32's
    tolerance and reported as the drift origin of a clean file)."""
    needs("onnxruntime.quantization")
    raw = export_local("small_emb", "ids8", exporter, tmp_path / "raw")
    q = int8_dynamic(raw, tmp_path / "q.onnx", reduce_range=True)
    assert any(n.op_type == "Gather" and n.input[0].endswith("_quantized") for n in onnx.load(str(q)).graph.node)
    r = run("small_emb", "ids8", q)
    emb = next(L for L in r.layers if L.module == "emb")
    assert emb.budget is not None and emb.budget.format == "int8" and emb.budget.own_budget > 0
    assert emb.metrics.max_rel.worst > 1e-4                   # the rounding is there, over float32's rtol
    assert r.precision.verdict == "within budget" and r.verdict == "ok", [(L.module, L.status) for L in r.layers]


def test_an_own_error_over_budget_whose_output_is_within_is_not_shown_as_the_verdict(files):
    """``budget.over`` is the layer's own error against its own budget; a layer whose budget was measured
    is then a drift (either test, decided in core decide), one held to the worst-case bound alone also needs
    its output over its output budget.  A layer with ``over`` that decide left ``ok`` is shown as such (not
    "OVER BUDGET" under a WITHIN BUDGET headline), in the TUI inspector and the text table."""
    import dataclasses

    from drifttui.report.text import budget_cells
    from drifttui.tui.layer_view import budget_line

    r = run("small_cnn", "img32", files["qdq"])
    L = next(L for L in r.layers if L.budget is not None and L.status == "ok" and L.budget.own_loss_db is not None)
    absorbed = dataclasses.replace(L, budget=dataclasses.replace(L.budget, over=True))
    line = budget_line(absorbed).plain
    assert "own error over budget, output within" in line and "OVER BUDGET" not in line
    assert str(budget_cells(absorbed)[0].style) == "yellow"
    drifting = dataclasses.replace(absorbed, status="drift")
    assert "OVER BUDGET" in budget_line(drifting).plain
    assert str(budget_cells(drifting)[0].style) == "bold red"
    assert "within budget" in budget_line(L).plain
