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
