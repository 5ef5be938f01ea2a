"""A graph edit verifies only when it also holds in the whole file (causes/holds.py, locate/in_file.py): the file as
``repair`` writes it, cut where the origin's case is fed, run at the levels a check runs it at.  On real torch and
ONNX Runtime: ``(x * 8).half().to(torch.int8)`` (tests/causes/forms40f.py's HalfCodes), whose float16 -> int8 Cast
pair ONNX Runtime merges (truncating the unrounded float)."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
import torch
from onnx import helper

from drifttui.core.explain.causes.locate.evaluate import ort_error
from drifttui.core.explain.causes.locate.in_file import file_errors, levels
from drifttui.core.onnx.graph import full_model
from drifttui.core.result import Config
from tests.causes import forms40f
from tests.causes.conftest import explained_run

SPEC = forms40f.__file__


@pytest.fixture(scope="module")
def half_codes(tmp_path_factory):
    path = tmp_path_factory.mktemp("in_file") / "half_codes.onnx"
    torch.manual_seed(0)
    module, x = forms40f.half_codes_shallow(), forms40f.rows_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), str(path), dynamo=False)
    return explained_run(Config(model=f"{SPEC}:half_codes_shallow", onnx=str(path), inputs=f"{SPEC}:rows_inputs",
                                samples=3))


def _identity_between_casts(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with an Identity between the float16 Cast and its int8 Cast: a rounding ONNX Runtime keeps with its
    graph optimisations off only (IdentityElimination, from level basic, removes it, and the Cast pair merges)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    half = next(n for n in out.graph.node if n.op_type == "Cast" and n.attribute[0].i == onnx.TensorProto.FLOAT16)
    reader = next(n for n in out.graph.node if half.output[0] in n.input)
    reader.input[:] = [f"{half.output[0]}/kept" if v == half.output[0] else v for v in reader.input]
    at = list(out.graph.node).index(reader)
    out.graph.node.insert(at, helper.make_node("Identity", [half.output[0]], [f"{half.output[0]}/kept"],
                                               name=f"{half.name}/kept"))
    return out


def test_an_edit_that_holds_only_in_the_cut_out_origin_fails_in_the_file(half_codes):
    """The cut-out origin runs with every optimisation off; the deployed output pass runs the file at level 'all'.
    An edit whose effect ONNX Runtime's optimisers undo there verifies on the cut-out and fails in the file."""
    engine, _, run, result, exp = half_codes
    ctx = engine.context(result)
    case = exp.case
    assert ort_error(case).fails                                           # the file's own origin drifts
    assert not ort_error(case, _identity_between_casts(case.model)).fails  # the cut-out edit holds there
    assert [lv for lv, _ in levels(ctx.cfg)] == ["disable", "all"]
    got = file_errors(ctx, _identity_between_casts(full_model(ctx.index)), [case])
    assert got is not None
    by_level = {lv: ev for lv, ev in got}
    assert not by_level["disable"].fails and by_level["all"].fails, by_level
    assert by_level["all"].max_abs >= 0.125 - 1e-9


def test_the_verified_patch_is_measured_in_the_whole_file_at_each_level(half_codes):
    """The head finding's patch (the per-op float16 rounding) carries its whole-file figures: the worst and the fresh
    samples at the per-layer level and at the deployed level, each within the tolerance."""
    _, _, _, result, exp = half_codes
    head = exp.findings[0]
    assert head.verified and head.patch["rewrite"] == "opmath_float32"
    trial = next(t for t in exp.verified if t.patch.spec == head.patch)
    in_file = trial.in_file
    assert {f["level"] for f in in_file} == {"disable", "all"}
    assert len(in_file) == 2 * (1 + 2) and not any(f["fails"] for f in in_file)
    assert np.isclose(max(f["local_after"] for f in in_file), 0.0)
    assert head.evidence["verification"]["whole_file"]["levels"] == ["disable", "all"]


def test_a_patch_that_held_only_in_the_cut_out_is_said_so():
    """The finding names the patches a whole-file run refused, the level and the figure there (not silently)."""
    from drifttui.core.explain.causes.conclude import Trial, cut_out_only
    from drifttui.core.explain.causes.locate.evaluate import Eval
    from drifttui.core.onnx.edit.patches import Patch

    refused = Trial(Patch({"op": "rewrite", "rewrite": "opmath_float32"}, "dtype", "", ""), Eval(0.0, True),
                    in_file=[{"sample": 0, "level": "disable", "local_after": 0.125, "fails": True}])
    held = Trial(Patch({"op": "rewrite", "rewrite": "log1p"}, "stability", "", ""), Eval(0.0, False),
                 in_file=[{"sample": 0, "level": "all", "local_after": 0.0, "fails": False}])
    said = cut_out_only([refused, held])
    assert "1 patch(es) (opmath_float32)" in said and "'disable'" in said and "0.125" in said
    assert cut_out_only([held]) == ""
