"""Upstream-reported drifts (tests/causes/upstream.py) exported by the real exporters and run in real
ONNX Runtime: the origin, the headline cause's class and kind, verified, and ``repair`` -> ``check``.

The nearest Resize one pixel off (microsoft/onnxruntime#12098) is a runtime deviation when the file
holds sizes (the ONNX reference implementation picks torch's pixel, ORT does not) and an export
mistranslation when it holds a float32 ``scale_factor`` (the spec's ``dst / scale`` rounds otherwise
than torch's ``dst * (1/scale)``); both verify with Gathers on the indices torch computes.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).parent
SPEC = f"{HERE / 'upstream.py'}"
INPUTS = {"nearest": "img_inputs", "nearest_scale": "img_inputs", "nearest2x": "img_inputs", "bilinear9": "img_inputs",
          "nearest3d": "vol_inputs", "index_add": "rows_inputs", "alone_12098": "line_inputs",
          "alone_121390": "tiny_inputs", "skip_up": "wide_inputs", "alone_bilinear": "small_img_inputs"}
ORIGIN = {"alone_12098": "", "alone_121390": "", "alone_floordiv": "", "alone_softplus": "", "alone_scatter": "",
          "alone_logsig": "", "alone_bilinear": "", "alone_topk": "",    # one-call models: the root is the origin
          "logsigmoid_far": "body.inner", "bce": "body.inner"}

# (model, exporter, opset) -> (headline class, words of its message, rewrite, kind, localisation kind)
FORMS = {
    ("nearest", "torchscript", None): ("interpolation", "the bug is in ONNX Runtime", "resize_gather", "runtime",
                                       "runtime"),
    ("nearest", "dynamo", None): ("interpolation", "the bug is in ONNX Runtime", "resize_gather", "runtime", "runtime"),
    # opset 10: the reference evaluator cannot run the old Resize, and the message says it is not measured
    ("nearest", "torchscript", 10): ("interpolation", "is not measured", "resize_gather", "export", "unknown"),
    ("nearest_scale", "torchscript", 13): ("interpolation", "as the ONNX spec says", "resize_gather", "export",
                                           "export"),
    ("nearest3d", "torchscript", 11): ("interpolation", "the bug is in ONNX Runtime", "resize_gather", "runtime",
                                       "runtime"),
    ("alone_12098", "torchscript", 14): ("interpolation", "the bug is in ONNX Runtime", "resize_gather", "runtime",
                                         "runtime"),
    ("alone_121390", "dynamo", None): ("interpolation", "as the ONNX spec says", "resize_gather", "export", "export"),
    ("skip_up", "dynamo", None): ("interpolation", "as the ONNX spec says", "resize_gather", "export", "export"),
    ("scatter_old", "torchscript", 10): ("op-compat", "Scatter /body/Scatter has no reduction", "scatter_reduction",
                                         "export", "unknown"),
    ("scatter_old", "torchscript", 9): ("op-compat", "Scatter /body/Scatter has no reduction", "scatter_reduction",
                                        "export", "unknown"),
    ("bilinear9", "torchscript", 9): ("interpolation", "opset-9 Upsample", "resize_opset11", "export", "unknown"),
    ("logsigmoid_far", "torchscript", None): ("stability", "as the exporter lowered it loses precision", "workaround",
                                              "export", "export"),
    ("bce", "torchscript", None): ("stability", "Log(1 - Sigmoid(x)) as -Softplus(x)", "workaround", "export", "export"),
    # one torch call's Log(1 - Sigmoid) composite: the lowering's instability, as for TorchScript (until session 30
    # told as ONNX Runtime's Sigmoid kernel, whose tail rounds otherwise than the reference on these inputs)
    ("bce", "dynamo", None): ("stability", "unstable composite", "workaround", "runtime", "runtime"),
    ("alone_floordiv", "torchscript", None): ("dtype", "truncates towards zero where torch floors", "floor_cast",
                                              "export", "export"),
    ("alone_softplus", "torchscript", None): ("op-compat", "the threshold is missing", "softplus_threshold", "export",
                                              "export"),
    ("alone_scatter", "torchscript", 11): ("op-compat", "ScatterElements /ScatterElements has no reduction",
                                           "scatter_reduction", "export", "export"),
    ("alone_logsig", "dynamo", None): ("op-compat", "the bug is in ONNX Runtime", "workaround", "runtime", "runtime"),
    ("alone_bilinear", "torchscript", 10): ("interpolation", "always asymmetric", "resize_opset11", "export",
                                            "unknown"),
    ("log1p", "torchscript", None): ("stability", "computes log1p as Log(1 + x)", "log1p", "export", "export"),
    ("log1p", "dynamo", None): ("stability", "computes log1p as Log(1 + x)", "log1p", "export", "export"),
    ("expm1", "dynamo", None): ("stability", "computes expm1 as Exp(x) - 1", "expm1", "export", "export"),
    ("index_add", "torchscript", None): ("op-compat", "duplicate indices overwrite instead of adding",
                                         "scatter_reduction", "export", "export"),
}
FAST = {("nearest", "torchscript", None), ("nearest_scale", "torchscript", 13), ("log1p", "torchscript", None),
        ("alone_12098", "torchscript", 14), ("bce", "torchscript", None), ("scatter_old", "torchscript", 10),
        ("alone_floordiv", "torchscript", None)}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    import torch

    from tests.causes.conftest import explained_run
    from drifttui.core.result import Config
    from tests.causes import upstream

    root = tmp_path_factory.mktemp("upstream")
    cache: dict[tuple, Any] = {}

    def go(model: str, exporter: str, opset: Any) -> Any:
        key = (model, exporter, opset)
        if key not in cache:
            torch.manual_seed(0)
            path = root / f"{model}-{exporter}-{opset}.onnx"
            args = getattr(upstream, INPUTS.get(model, "vec_inputs"))()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(getattr(upstream, model)(), args, str(path), dynamo=exporter == "dynamo",
                                  **({} if opset is None else {"opset_version": opset}))
            cfg = Config(model=f"{SPEC}:{model}", onnx=str(path), inputs=f"{SPEC}:{INPUTS.get(model, 'vec_inputs')}",
                         samples=3)
            cache[key] = explained_run(cfg)
        return cache[key]

    return go


def _params(forms: Any) -> list[Any]:
    return [pytest.param(f, id=f"{f[0]}-{f[1]}{f[2] or ''}", marks=() if f in FAST else pytest.mark.drifts)
            for f in forms]


@pytest.mark.parametrize("form", _params(FORMS))
def test_upstream_form_is_explained_verified_and_repaired(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    cls, words, rewrite, kind, loc_kind = FORMS[form]
    engine, cfg, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == ORIGIN.get(form[0], "body")
    assert exp.loc.kind == loc_kind, exp.loc.note
    head = exp.findings[0]
    assert (head.check, head.verified, head.kind) == (cls, True, kind), (head.check, head.message)
    assert words in head.message and head.patch.get("rewrite") == rewrite, head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None and [p.get("rewrite") for p in fixed.applied] == [rewrite]
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


def test_the_runtime_deviation_names_the_resize_and_the_upstream_bug(explained):
    """ORT's Resize is the deviating kernel (the reference evaluator picks torch's pixels): the
    finding names it, says the bug is ORT's, and the fix cites the upstream issue and repro."""
    _, _, _, _, exp = explained("nearest", "torchscript", None)
    head = exp.findings[0]
    assert exp.loc.first_node_op == "Resize" and head.onnx_nodes == [exp.loc.first_node]
    assert "one off" in head.message and "onnxruntime#12098" in head.fix and "drifttui repro" in head.fix
    # the verified patch held on the fresh samples too
    trial = next(t for t in exp.verified if t.patch.spec.get("rewrite") == "resize_gather")
    assert len(trial.fresh) == 2 and not any(f["fails"] for f in trial.fresh)


@pytest.mark.parametrize("n_in,n_out", [(26, 64), (13, 32), (5, 7), (7, 5), (10, 3), (3, 10), (16, 32), (9, 9),
                                        (100, 37), (37, 100), (1, 4), (4, 1)])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_the_indices_are_torch_s(n_in, n_out, mode):
    """The precomputed Gather indices pick what torch's interpolate picks, for sizes it finds hard."""
    import torch
    import torch.nn.functional as F

    from drifttui.core.onnx.edit.lowerings.resize_gather import torch_indices

    src = torch.arange(float(n_in)).reshape(1, 1, n_in)
    want = F.interpolate(src, size=n_out, mode=mode).numpy().ravel().astype(np.int64)
    assert torch_indices(n_in, n_out, mode).tolist() == want.tolist()


@pytest.mark.parametrize("n_in,scale", [(4, 2.05), (2, 3.15), (26, 64 / 26), (13, 1.7), (9, 0.6), (7, 2.0),
                                        (5, 1.0), (10, 0.5)])
@pytest.mark.parametrize("rank", [3, 4, 5])
def test_the_indices_with_a_scale_factor_are_torch_s(n_in, scale, rank):
    """With ``scale_factor`` torch uses 1/scale, and its 2-D kernel keeps two shortcuts (twice the
    size shifts by one bit: pytorch/pytorch#121390's rows); the indices follow each kernel."""
    import math

    import torch
    import torch.nn.functional as F

    from drifttui.core.onnx.edit.lowerings.resize_gather import torch_indices

    src = torch.arange(float(n_in)).reshape((1, 1) + (1,) * (rank - 3) + (n_in,))
    sf = (1.0,) * (rank - 3) + (scale,)
    want = F.interpolate(src, scale_factor=sf, mode="nearest").numpy().ravel().astype(np.int64)
    got = torch_indices(n_in, math.floor(n_in * scale), "nearest", scale, shortcut=rank == 4)
    assert got.tolist() == want.tolist()


def test_the_rewrite_keeps_the_graph_valid_and_drops_the_sizes_chain(explained):
    """The repaired file is a valid ONNX graph without the Resize and without the Shape/Slice/Concat
    nodes that only computed its sizes."""
    import onnx

    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    _, _, run, _, exp = explained("nearest", "torchscript", None)
    before = full_model(run.prepared.index)
    fixed = repair(before, exp).model
    onnx.checker.check_model(fixed, full_check=True)
    ops = [n.op_type for n in fixed.graph.node]
    assert "Resize" not in ops and ops.count("Gather") == 2
    assert len(ops) < len(before.graph.node) + 2      # the sizes chain went with the Resize


@pytest.mark.parametrize("model,exporter", [("nearest2x", "torchscript"), ("nearest2x", "dynamo"),
                                            pytest.param("log1p_big", "torchscript", marks=pytest.mark.drifts)])
def test_clean_controls_have_no_error_finding(explained, model, exporter):
    """An integer-scale nearest Resize and a log1p of arguments far from 0 compute what torch
    computes: no drift and not one error finding."""
    _, _, _, result, exp = explained(model, exporter, None)
    assert result.verdict == "ok"
    assert [f for f in exp.findings if f.severity == "error"] == []


@pytest.mark.drifts
def test_a_re_export_grafts_into_an_opset_9_file(explained):
    """The file (opset 9) is converted up to the re-export's opset: the converter drops the name of
    the Upsample it turns into a Resize; the graft still replaces it (one producer per value), and
    the grafted file passes check."""
    import onnx

    from drifttui.core.onnx.edit.graft.splice import graft
    from drifttui.core.explain.causes.propose.reexport.variants import try_reexport, variants
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, result, exp = explained("bilinear9", "torchscript", 9)
    ctx = engine.context(result)
    patch, ev = try_reexport(ctx, exp.case, next(v for v in variants(ctx) if v.exporter == "dynamo"))
    assert patch is not None and not ev.fails
    fixed = graft(full_model(run.prepared.index), patch.graft)
    onnx.checker.check_model(fixed, full_check=True)
    assert [n.op_type for n in fixed.graph.node].count("Upsample") == 0
    assert engine.recheck(cfg, fixed).verdict == "ok"


@pytest.mark.drifts
def test_topk_ties_in_a_one_call_model_say_why_no_patch_exists(explained):
    """The whole graph is the case of a one-call model: TopK ties get the no-patch reason there too."""
    _, _, _, result, exp = explained("alone_topk", "dynamo", None)
    assert result.verdict == "drift" and exp.case is not None and exp.case.module == ""
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check == "op-compat" and head.verified is False and "no patch exists" in head.message


def test_a_dynamic_batch_keeps_the_gathers_right_and_the_fix_says_what_they_hold(tmp_path):
    """A file with a dynamic batch dim: the Gathers index the resized axes only, so the repaired copy
    passes check at another batch size, and the fix says for which sizes the indices hold."""
    import torch

    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.onnx.graph import full_model
    from drifttui.core.result import Config
    from tests.causes import upstream

    path = tmp_path / "near-dyn.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(upstream.nearest(), upstream.img_inputs(), str(path), dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}})
    cfg = Config(model=f"{SPEC}:nearest", onnx=str(path), inputs=f"{SPEC}:img_inputs", samples=3)
    engine = Pipeline()
    run = engine.run(cfg)
    exp = engine.explain(run.result).explanation
    head = exp.findings[0]
    assert head.verified and head.patch["rewrite"] == "resize_gather"
    assert "13 -> 32, 26 -> 64" in head.fix and "dynamic input dims" in head.fix
    fixed = repair(full_model(run.prepared.index), exp).model
    assert engine.recheck(Config(model=cfg.model, onnx=cfg.onnx, inputs="shape:3x3x13x26", samples=2),
                          fixed).verdict == "ok"


@pytest.mark.parametrize("model", ["nearest", "nearest_scale"])
def test_dynamic_spatial_sizes_get_gathers_on_indices_computed_in_the_graph(tmp_path, model):
    """A file whose spatial dims are dynamic: the Gathers' indices are computed from the runtime shape
    (and the Resize's own sizes or scale) as torch computes them, so the repaired copy passes check at
    the measured size and at two others, where constant indices would pick the wrong pixels."""
    import torch

    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.onnx.graph import full_model
    from drifttui.core.result import Config
    from tests.causes import upstream

    path = tmp_path / f"{model}-hw.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(getattr(upstream, model)(), upstream.img_inputs(), str(path), dynamo=False,
                          input_names=["x"], opset_version=13, dynamic_axes={"x": {2: "h", 3: "w"}})
    cfg = Config(model=f"{SPEC}:{model}", onnx=str(path), inputs=f"{SPEC}:img_inputs", samples=3)
    engine = Pipeline()
    run = engine.run(cfg)
    exp = engine.explain(run.result).explanation
    head = exp.findings[0]
    assert head.verified and head.patch["rewrite"] == "resize_gather" and head.patch.get("dynamic") is True
    assert "computed in the graph from the runtime shape" in head.fix
    fixed = repair(full_model(run.prepared.index), exp).model
    for shape in ("1x3x13x26", "1x3x11x29", "1x3x7x19"):
        again = engine.recheck(Config(model=cfg.model, onnx=cfg.onnx, inputs=f"shape:{shape}", samples=2), fixed)
        assert again.verdict == "ok", (shape, again.drift_origin, [(l.module, l.status, l.metrics.max_abs.worst) for l in again.layers])
