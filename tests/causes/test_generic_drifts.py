"""Upstream drift forms no catalogue entry covers (tests/causes/forms30.py), inside a deep model (a
16-call stem, the form, a head), exported by the real exporters and run in real ONNX Runtime: the
origin, the cause's class by mechanism, verified by a generic counterfactual (a re-export with the
other exporter or with torch's own decompositions, a stable form), and ``repair``'s file passes
``check``.  The one fast form runs in ``make test``; the rest behind the ``drifts`` marker.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
SPEC = f"{HERE / 'forms30.py'}"
INPUTS = {"sdpa_masked": "seq_inputs"}

# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
FORMS = {
    # torchlib's hand-written lowering is wrong, the TorchScript exporter cannot export it: torch's
    # own core ATen decomposition verifies
    ("ce_smooth", "dynamo"): ("lowering", "reexport", {"decompose": "core_aten"}, "aten.cross_entropy_loss"),
    # the other exporter is right
    ("sdpa_masked", "dynamo"): ("lowering", "reexport", {"exporter": "torchscript"},
                                "aten.scaled_dot_product_attention"),
    # the truncating Div is the shift's lowering: the story names >>, not //
    ("shift", "torchscript"): ("lowering", "rewrite", {"rewrite": "floor_div"}, "torch called >>"),
    # inf where torch is finite: the stable form verifies because inf is an error figure
    ("logaddexp", "dynamo"): ("stability", "rewrite", {"rewrite": "logaddexp"}, "falls from inf ("),
}
FAST = {("shift", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    import torch

    from tests.causes.conftest import explained_run
    from drifttui.core.result import Config
    from tests.causes import forms30

    root = tmp_path_factory.mktemp("forms30")
    cache: dict[tuple, Any] = {}

    def go(model: str, exporter: str) -> Any:
        key = (model, exporter)
        if key not in cache:
            inputs = INPUTS.get(model, "rows_inputs")
            path = root / f"{model}-{exporter}.onnx"
            torch.manual_seed(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(getattr(forms30, model)(), (getattr(forms30, inputs)(),), str(path),
                                  dynamo=exporter == "dynamo")
            cfg = Config(model=f"{SPEC}:{model}", onnx=str(path), inputs=f"{SPEC}:{inputs}", samples=3)
            cache[key] = explained_run(cfg)
        return cache[key]

    return go


def _params() -> list[Any]:
    return [pytest.param(f, id=f"{f[0]}-{f[1]}", marks=() if f in FAST else pytest.mark.drifts) for f in FORMS]


@pytest.mark.parametrize("form", _params())
def test_a_form_no_catalogue_entry_knows_is_explained_verified_and_repaired(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    cls, op, changed, words = FORMS[form]
    engine, cfg, run, result, exp = explained(*form)
    assert len(run.prepared.calls) >= 17
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    assert (head.check, head.verified, head.severity) == (cls, True, "error"), (head.check, head.message)
    assert head.patch["op"] == op and all(head.patch.get(k) == v for k, v in changed.items()), head.patch
    assert words in head.message, head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


@pytest.mark.drifts
def test_the_decomposition_fix_names_the_source_change(explained):
    """The verified decomposition says which source change avoids the drift, and the budget note
    is absent when every candidate was tried."""
    _, _, _, _, exp = explained("ce_smooth", "dynamo")
    head = exp.findings[0]
    assert "run_decompositions(torch.export.default_decompositions())" in head.fix
    assert "aten.cross_entropy_loss" in head.fix and "drifttui repro" in head.fix


@pytest.mark.drifts
def test_an_inf_drift_is_sized_inf_in_the_table_and_the_evidence(explained):
    """ORT's inf where torch is finite: the origin's max |d| is inf (not its finite elements' max),
    the count of such elements is kept, and the JSON report writes it as the string "inf"."""
    from drifttui.report.json_report import dumps

    _, _, _, result, exp = explained("logaddexp", "dynamo")
    origin = next(layer for layer in result.layers if layer.module == "body")
    assert math.isinf(origin.metrics.max_abs.worst) and origin.metrics.nan_mismatch > 0
    assert exp.loc.ort.nonfinite > 0 and math.isinf(exp.loc.ort.max_abs)
    text = dumps(result)
    assert '"inf"' in text and "Infinity" not in text


@pytest.mark.drifts
def test_the_clean_control_has_no_error_finding(explained):
    _, _, _, result, exp = explained("ce_plain", "dynamo")
    assert result.verdict == "ok" and [f for f in exp.findings if f.severity == "error"] == []
