"""Drifts the real exporters and ONNX Runtime make (issue 20), exported by the real exporters from
``tests/causes/real.py`` and run in real ONNX Runtime: the headline cause names what is wrong,
is verified, and ``repair`` writes a file that passes ``check`` end to end.

Upstream reports behind the forms: TorchScript lowers a float ``floor_divide`` to Div + Cast
(truncation); ``nn.Softplus``'s threshold has no ONNX counterpart; ``scatter_add`` / ``index_put``
with duplicate indices before opset 16 (no ``reduction``); ``AvgPool2d(divisor_override)`` is
dropped by the exporters; opset-10 ``Upsample``/``Resize`` is asymmetric only; ORT's Sigmoid
returns 0 in the tail where the reference implementation (and torch) do not.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
SPEC = f"{HERE / 'real.py'}"
INPUTS = {"indexput": "rows_inputs", "divisor": "img_inputs", "antialias": "img_inputs", "bilinear": "img_inputs",
          "decoder": "img_inputs", "folded": "cols_inputs"}

# (model, exporter, opset) -> (headline class, words of its message, patch op, kind)
FORMS = {
    ("floordiv", "torchscript", None): ("dtype", "truncates towards zero where torch floors", "rewrite", "export"),
    ("softplus", "torchscript", None): ("op-compat", "the threshold is missing", "rewrite", "export"),
    ("scatter", "torchscript", 11): ("op-compat", "ScatterElements", "rewrite", "export"),
    ("indexput", "torchscript", 11): ("op-compat", "ScatterND", "rewrite", "export"),
    ("logsig", "dynamo", None): ("op-compat", "bug is in ONNX Runtime", "rewrite", "runtime"),
    ("divisor", "torchscript", None): ("padding", "divisor_override", "rewrite", "export"),
    ("divisor", "dynamo", None): ("padding", "divisor_override", "rewrite", "export"),     # dynamo drops it too
    ("bilinear", "torchscript", 10): ("interpolation", "asymmetric", "rewrite", "export"),
    # a.t() folded into b's Gemm (transA): a is split from b at the value it hands on, seen through the
    # Transpose the exporter absorbed (prepare/plan/absorbed.py): a is the origin, its Cast is named
    ("folded", "torchscript", None): ("dtype", "truncates towards zero", "rewrite", "export"),
    # no graph patch: the verified re-export is grafted into the file; the story is the epsilon
    ("cosine", "torchscript", None): ("normalization", "eps=0.5", "reexport", "export"),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    import torch

    from tests.causes import real

    root = tmp_path_factory.mktemp("real")
    cache: dict[tuple, Path] = {}

    def get(model: str, exporter: str, opset: Any) -> Path:
        key = (model, exporter, opset)
        if key not in cache:
            torch.manual_seed(0)
            m = getattr(real, model)()
            args = getattr(real, INPUTS.get(model, "vec_inputs"))()
            path = root / f"{model}-{exporter}-{opset}.onnx"
            kw = {} if opset is None else {"opset_version": opset}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(m, args, str(path), dynamo=exporter == "dynamo", **kw)
            cache[key] = path
        return cache[key]

    return get


def _config(model: str, path: Path, samples: int = 3) -> Any:
    from drifttui.core.result import Config

    return Config(model=f"{SPEC}:{model}", onnx=str(path), inputs=f"{SPEC}:{INPUTS.get(model, 'vec_inputs')}",
                  samples=samples)


@pytest.fixture(scope="module")
def explained(exported):
    from tests.causes.conftest import explained_run

    cache: dict[tuple, Any] = {}

    def go(model: str, exporter: str, opset: Any) -> Any:
        key = (model, exporter, opset)
        if key not in cache:
            cfg = _config(model, exported(model, exporter, opset))
            cache[key] = explained_run(cfg)
        return cache[key]

    return go


# the default suite keeps one form per mechanism (graph rewrite, ORT workaround, grafted re-export,
# an opset conversion); the others run with `make test-drifts` (-m drifts)
FAST = {("folded", "torchscript", None), ("logsig", "dynamo", None), ("cosine", "torchscript", None),
        ("scatter", "torchscript", 11)}


def _params(forms: Any) -> list[Any]:
    return [pytest.param(f, id=f"{f[0]}-{f[1]}{f[2] or ''}", marks=() if f in FAST else pytest.mark.drifts)
            for f in forms]


@pytest.mark.parametrize("form", _params(FORMS))
def test_headline_names_the_wrong_node_and_repair_passes_check(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    cls, words, op, kind = FORMS[form]
    engine, cfg, run, result, exp = explained(*form)
    assert result.verdict == "drift"
    head = exp.findings[0]
    assert (head.check, head.verified, head.kind) == (cls, True, kind), (head.check, head.message)
    assert words in head.message and head.patch["op"] == op, head.message
    if form[0] == "folded":         # never b, fed a's values
        assert result.drift_origin.module == head.module == "a"
    fixed = repair(full_model(run.prepared.index), exp)     # what the CLI repairs: the weights in the file
    assert fixed.model is not None and fixed.applied
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


def test_the_fix_follows_the_verified_patch(explained):
    """opset-10 bilinear: the verified patch is the opset-11 Resize, so the fix is the opset."""
    _, _, _, _, exp = explained("bilinear", "torchscript", 10)
    head = exp.findings[0]
    assert "opset >= 11" in head.fix and "align_corners" not in head.fix


def test_runtime_deviation_names_the_kernel_not_the_amplifier(explained):
    """log(sigmoid(x)): ORT's Sigmoid is wrong by 1e-9 and the Log amplifies it; the finding names
    the Sigmoid and keeps kind runtime (the upstream bug is in ORT)."""
    _, _, _, _, exp = explained("logsig", "dynamo", None)
    assert exp.loc.kind == "runtime"
    head = exp.findings[0]
    assert head.patch["form"] in ("log_sigmoid", "safe_sigmoid")
    assert any("Sigmoid" in n or "sigmoid" in n for n in head.onnx_nodes)
    assert exp.loc.first_node is not None and "sigmoid" in exp.loc.first_node.lower()


@pytest.mark.parametrize("model", ["floordiv", "cosine"] + [pytest.param(m, marks=pytest.mark.drifts) for m in
                                                              ("softplus", "scatter", "indexput", "bilinear", "decoder")])
def test_clean_controls_have_no_error_finding(explained, model):
    """The same models exported by today's dynamo exporter (opset 18+) compute what torch computes:
    no drift, and not one error finding."""
    _, _, _, result, exp = explained(model, "dynamo", None)
    assert result.verdict == "ok"
    assert [f for f in exp.findings if f.severity == "error"] == []


def test_a_patch_that_fits_the_worst_sample_only_does_not_verify(explained):
    """holds.py: a "re-export" that returns the worst sample's torch outputs as constants (what a
    trace that baked its input into the graph does) removes the drift on that sample and on no
    other: it stays unverified."""
    from onnx import helper, numpy_helper

    from drifttui.core.explain.causes import Trial
    from drifttui.core.explain.causes.locate.evaluate import Eval
    from drifttui.core.onnx.edit.graft.splice import Graft
    from drifttui.core.explain.causes.holds import hold
    from drifttui.core.onnx.edit.patches import Patch

    engine, _, _, result, exp = explained("cosine", "torchscript", None)
    ctx = engine.context(result)
    want = next(iter(exp.case.expected.values()))
    g = helper.make_graph([helper.make_node("Constant", [], ["y"], value=numpy_helper.from_array(want, "c"))], "baked",
                          [helper.make_tensor_value_info("x", 1, None), helper.make_tensor_value_info("x2", 1, None)],
                          [helper.make_tensor_value_info("y", 1, None)])
    baked = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    patch = Patch({"op": "reexport", "module": exp.case.module}, "versions", "", "", graft=Graft(baked, ["a", "b"], ["y"]))
    trial = Trial(patch, Eval(0.0, False))
    hold(ctx, [trial])
    assert trial.after.fails and "fresh sample" in trial.after.error
    assert len(trial.fresh) >= 1 and all(f["fails"] for f in trial.fresh)
    real = next(t for t in exp.trials if t.patch.spec["op"] == "reexport" and not t.after.fails)     # the verified one
    assert len(real.fresh) == 2 and not any(f["fails"] for f in real.fresh)    # the real one holds


def test_repro_and_repair_when_the_origin_output_is_a_child_module_s(exported, tmp_path, capsys):
    """A decoder whose output is its head Conv's: the case takes the decoder's whole scope."""
    from drifttui.cli import main

    src = exported("decoder", "torchscript", 10)
    args = [f"{SPEC}:decoder", "--onnx", str(src), "--inputs", f"{SPEC}:img_inputs", "--samples", "2"]
    assert main(["repro", *args, "--out", str(tmp_path / "case")]) == 1
    text = capsys.readouterr().out
    assert "of dec," in text and "the drift reproduces" in text
    assert main(["repair", *args, "--out", str(tmp_path / "fixed.onnx")]) == 0
    assert "check on the repaired copy: ok" in capsys.readouterr().out
    assert main(["check", args[0], "--onnx", str(tmp_path / "fixed.onnx"), *args[3:]]) == 0


def test_topk_ties_say_why_no_patch_exists(explained):
    """topk on rounded values: the indices differ where values tie; no graph edit can reproduce
    torch's tie order, and the finding says so instead of "no patch among N removed it"."""
    _, _, _, result, exp = explained("topk", "dynamo", None)
    assert result.verdict == "drift"
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check == "op-compat" and head.verified is False
    assert "no patch exists" in head.message and "tied values" in head.message
