"""A --baseline of an int8 file made on a processor with other int8 kernels is flagged, not compared
silently (issue 36: ORT's u8s8 products saturate on x86 without VNNI, so the errors differ)."""
from __future__ import annotations

import dataclasses

from drifttui.report.baseline import mismatch
from drifttui.report.gate import Gate, decide
from tests.tui.replay import load_fixture

AVX2 = "int8 kernels: AVX2, no VNNI: u8s8 products may saturate (16-bit pair sums, VPMADDUBSW): results can differ"


def _on(result, kernel: str, cpu: str, int8: bool = True):
    precision = dataclasses.replace(result.precision, kernels=AVX2 if int8 else "")
    env = dataclasses.replace(result.environment, int8_kernel=kernel, cpu=cpu)
    return result.with_(precision=precision, environment=env)


def test_an_int8_baseline_from_other_kernels_is_not_this_runs():
    base = load_fixture()
    run = _on(base, "AVX2 (saturating u8s8)", "x86_64: SSE4.1, AVX2, no AVX-512, no VNNI")
    same = _on(base, "AVX2 (saturating u8s8)", "x86_64: SSE4.1, AVX2, no AVX-512, no VNNI")
    assert mismatch(run, same) == ""
    vnni = _on(base, "AVX-512 VNNI", "x86_64: SSE4.1, AVX2, AVX-512F, AVX-512BW, AVX-512 VNNI")
    why = mismatch(run, vnni)
    assert "other int8 kernels: AVX2 (saturating u8s8) in this run" in why and "AVX-512 VNNI in the baseline" in why
    decision = decide(run, Gate(baseline=vnni))
    assert decision.exit_code == 2 and "other int8 kernels" in decision.usage
    old = _on(base, "", "")                   # a schema_version 1 report: no processor recorded
    assert "does not record its processor" in mismatch(run, old)
    # a float file's errors do not depend on the int8 kernels: any processor's baseline is its own
    float_run = _on(base, "AVX2 (saturating u8s8)", "x86", int8=False)
    assert mismatch(float_run, vnni) == ""
