"""Each silent-drift class, injected into a small model, gets a verified headline of that class;
``repair`` makes ``check`` pass; clean models give no error finding."""
from __future__ import annotations

import pytest

from tests.causes.conftest import MULTI_VARIANTS

DRIFTS = [(v, e) for v in MULTI_VARIANTS if v != "clean" for e in ("dynamo", "torchscript")
          if not (v == "gelu" and e == "torchscript")]      # TorchScript (opset 17) decomposes tanh-GELU


def _describe(result, exp) -> str:
    o = result.drift_origin
    lines = [f"origin {o.module if o else None}; kind {exp.loc.kind if exp.loc else '-'}"]
    lines += [f"  {f.check} {f.severity} {f.module} verified={f.verified} {f.patch} | {f.message[:120]}"
              for f in exp.findings[:5]]
    return "\n".join(lines)


@pytest.mark.parametrize("variant,exporter", DRIFTS)
def test_headline_is_the_injected_class_and_verified(run, variant, exporter):
    _, result, exp = run("multi", exporter, variant)
    head = exp.findings[0]
    assert result.verdict == "drift", _describe(result, exp)
    assert head.check == MULTI_VARIANTS[variant][0], _describe(result, exp)
    assert head.severity == "error" and head.verified is True, _describe(result, exp)
    assert head.local_after is not None and head.local_before is not None
    assert head.local_after < head.local_before
    assert head.patch and head.patch["op"] != "reexport", _describe(result, exp)


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_clean_model_has_no_error_finding(run, exporter):
    _, result, exp = run("multi", exporter)
    assert result.verdict == "ok"
    assert not [f for f in exp.findings if f.severity == "error"], _describe(result, exp)


def test_baked_sequence_length_is_dynamic_axes_verified(run):
    """Traced at T=8 with a dynamic T, run at T=16: the Python-number length stayed 8.  The file declares T
    dynamic, so the size is computed from the runtime shape (a constant 16 would be right at T=16 only)."""
    _, result, exp = run("seq", "torchscript")
    head = exp.findings[0]
    assert result.drift_origin is not None and result.drift_origin.module == "mean", _describe(result, exp)
    assert head.check == "dynamic-axes" and head.verified is True, _describe(result, exp)
    assert head.patch["op"] == "rewrite" and head.patch["rewrite"] == "runtime_size"
    assert head.patch["runtime"] == 16 and head.patch["baked"] == 8


@pytest.mark.parametrize("exporter,variant", [("dynamo", "trunc"), ("torchscript", "clean")])
def test_integer_division_that_truncates_is_dtype_verified(run, exporter, variant):
    """Dynamo lowers // correctly (edited here into a plain Div); TorchScript's own export of
    ``a // 3`` is a plain integer Div: a genuine export drift for negative numbers."""
    _, result, exp = run("intdiv", exporter, variant)
    head = exp.findings[0]
    assert result.drift_origin is not None and result.drift_origin.module == "fd", _describe(result, exp)
    assert head.check == "dtype" and head.verified is True, _describe(result, exp)
    assert head.patch == {**head.patch, "op": "rewrite", "rewrite": "floor_div"}


def test_clean_integer_division_has_no_error(run):
    _, result, exp = run("intdiv", "dynamo")
    assert result.verdict == "ok" and not [f for f in exp.findings if f.severity == "error"]


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_clip_bound_is_verified_against_the_modules_bounds(run, exporter):
    """A Clip whose upper bound is not the module's (Hardtanh max_val 0.75, the file says 1.5):
    the bounds patch taken from the module removes the drift."""
    _, result, exp = run("clip", exporter, "stale")
    head = exp.findings[0]
    assert result.drift_origin is not None and result.drift_origin.module == "bound", _describe(result, exp)
    assert head.check == "op-compat" and head.verified is True, _describe(result, exp)
    assert head.patch == {**head.patch, "op": "rewrite", "rewrite": "clip_bounds", "max": 0.75}
    assert "min" not in head.patch                # only the stale bound changes
    assert head.local_after < head.local_before


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_clean_clip_has_no_error(run, exporter):
    _, result, exp = run("clip", exporter)
    assert result.verdict == "ok" and not [f for f in exp.findings if f.severity == "error"], _describe(result, exp)


def test_opset10_resize_is_interpolation_verified(run):
    """A genuine export drift: opset-10 Resize is asymmetric whatever torch asked for."""
    _, result, exp = run("multi", "torchscript10")
    head = exp.findings[0]
    assert result.drift_origin is not None and result.drift_origin.module == "up", _describe(result, exp)
    assert head.check == "interpolation" and head.verified is True, _describe(result, exp)
    assert head.patch["rewrite"] == "resize_opset11"
