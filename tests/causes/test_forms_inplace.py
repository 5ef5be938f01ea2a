"""In-place updates through a view the TorchScript exporter loses (tests/causes/forms_inplace.py; issue 30 points 3
and 6), the deep ones inside forms30's 16-call stem and a head, exported by the real exporters and run in real ONNX
Runtime: the origin (the module whose computation the file dropped, never its consumer or its parent), the cause's
class by mechanism (``lowering``: the TorchScript exporter's handling of aliasing, the torch op named), ``verified``
(the dynamo re-export of the module) and ``repair``'s file passes ``check``; the dynamo files and an in-place update
TorchScript handles are clean.

First run, before any engine change (session 29, engine at d5a28b7):

| form (TorchScript) | first run: origin / class by mechanism / verified / repair passes check | after |
|---|---|---|
| view_scale (deep) | **(root)** (body has no node; ``Gemm /head/Gemm`` named) / no / yes (root re-exported) / ok | body, aliasing story, verified, ok |
| named_slice (deep) | **(root)** (``Gemm /head/Gemm`` named) / no / yes (root) / ok | body, aliasing story, verified, ok |
| narrow_copy (shallow) | **(root)** (``Mul /Mul`` named) / no / yes (root) / **no file** | body, aliasing story, verified, ok |
| alias_read (deep) | body / no (``Slice /body/Slice computes something else``) / yes / ok | body, aliasing story, verified, ok |

What moved them: ``prepare/plan/orphans.py`` + ``onnx/edit/orphan_steps.py`` (a call with no node although it
computes gets an ``Identity`` in its scope between the value its consumer reads and that consumer), and
``locate/aliased_updates.py`` + ``propose/reexport/aliasing.py`` (make_fx shows the in-place op through a view).

Held out, written after the mechanism and run once (``HELD_OUT``; figures in docs/drift-catalogue.md).
"""
from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from drifttui.core.explain.causes.locate.aliased_updates import describe
from tests.causes import forms_inplace as forms
from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_ALIASED = ("lowering", "reexport", {"exporter": "dynamo"}, "the TorchScript exporter loses body's in-place update")
VERIFIED = {(m, "torchscript"): _ALIASED for m in ("view_scale", "named_slice", "narrow_copy", "alias_read")}
HELD_OUT = {(m, "torchscript"): _ALIASED for m in ("transposed_add", "unsqueezed_set")}
# a module with a parameter whose whole computation the exporter dropped: before session 30 it had no Identity (a
# parameter ruled it out) and the origin was (root)
PARAMS = {(m, "torchscript"): _ALIASED for m in ("param_slice", "param_slice_shallow")}
CLEAN = [("slice_add", "torchscript"), ("masked_view", "torchscript"), ("clone_only", "torchscript"), ("view_scale", "dynamo"), ("named_slice", "dynamo"),
         ("narrow_copy", "dynamo"), ("alias_read", "dynamo"), ("param_slice", "dynamo")]
FAST = {("narrow_copy", "torchscript")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms_inplace")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_lost_in_place_update_is_named_at_its_module_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], "body")


def test_the_dropped_module_shows_no_onnx_op_of_its_own(explained):
    """The Identity that stands for the dropped computation is drifttui's, not the file's: the origin's ONNX
    ops say so ("none (dropped)"), not "Identity"."""
    from drifttui.report.summary import origin_text

    result = explained("narrow_copy", "torchscript")[3]
    body = next(L for L in result.layers if L.module == "body")
    assert body.op_types == ["none (dropped)"] and result.drift_origin.op_types == ["none (dropped)"]
    assert "ONNX none (dropped)" in origin_text(result) and "Identity" not in origin_text(result).split(":")[0]


@pytest.mark.parametrize("form", params(HELD_OUT, set()))
def test_a_held_out_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, HELD_OUT[form], "body")


@pytest.mark.parametrize("form", params(PARAMS, {("param_slice_shallow", "torchscript")}))
def test_a_module_with_parameters_whose_computation_was_dropped_is_the_origin(explained, form):
    assert_verified_and_repaired(explained, form, PARAMS[form], "body")


def test_the_finding_names_the_lost_in_place_call_not_drifttui_s_identity(explained, tmp_path, capsys):
    """What the user reads: the module and the in-place call the forward made (``y.narrow(1, 4, 8).copy_(...)``),
    in the message, the JSON's ``torch_op`` and the finding's nodes; never ``/body/drifttui_orphan_0``, the
    Identity drifttui stands in for the dropped computation."""
    import json

    from drifttui.cli import main

    cfg = explained("narrow_copy", "torchscript")[1]
    report = tmp_path / "r.json"
    assert main(["diagnose", cfg.model, "--onnx", cfg.onnx, "--inputs", cfg.inputs, "--samples", "3",
                 "--json", str(report)]) == 1
    said = capsys.readouterr().out
    assert "drifttui_orphan" not in said, said
    head = json.loads(report.read_text())["findings"][0]
    assert "drifttui_orphan" not in json.dumps(head)
    assert (head["module"], head["torch_op"], head["aten_op"]) == ("body", "torch.Tensor.copy_", "aten.copy_")
    assert "in-place update torch.Tensor.copy_ through torch.Tensor.narrow" in head["message"], head["message"]
    assert "ERROR   lowering      body: the TorchScript exporter loses body's in-place update" in said, said


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_a_module_the_exporter_dropped_that_only_copies_is_mapped_and_clean(explained):
    run, result = explained("clone_only", "torchscript")[2:4]
    body = next(cm for cm, c in zip(run.prepared.plan.calls, run.prepared.calls) if c.module == "body")
    assert body.outputs and body.status == "ok", (body.status, body.note)
    assert result.verdict == "ok"


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(VERIFIED))
    assert len(deep) * 2 >= len(VERIFIED), deep


@pytest.mark.parametrize("cls, said", [
    (forms.ViewScale, "aten.mul_ through aten.select of aten.view"),
    (forms.NamedSlice, "aten.add_ through aten.slice"),
    (forms.NarrowCopy, "aten.copy_ through aten.slice"),
    (forms.AliasRead, "aten.mul_ on a tensor whose view (aten.slice) is read after it")])
def test_the_torch_op_updated_through_a_view_is_named(cls, said):
    assert describe(make_fx(cls())(torch.randn(6, 32))) == said


def test_a_module_updating_out_of_place_or_in_place_without_a_view_has_no_such_update():
    class OutOfPlace(torch.nn.Module):
        def forward(self, x):
            y = x.clone()
            y.mul_(2)                         # in place, but nothing aliases y
            return torch.cat([y[:, :4] + 1, y[:, 4:]], 1)

    assert describe(make_fx(OutOfPlace())(torch.randn(6, 32))) is None
