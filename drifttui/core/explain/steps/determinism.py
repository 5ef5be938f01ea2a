"""Step 5: determinism.

Run PyTorch twice with deterministic algorithms off and twice with them on, ONNX Runtime twice
with default threading and twice single-threaded without arena; report the run-to-run
variance on both sides; then rerun the whole check with ``deterministic=True`` and say
whether the drift vanishes (then it is reduction order, not maths).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from drifttui.core.base.metrics import elementwise_gap
from drifttui.core.runtime.torch_hooks import run_model, to_numpy
from drifttui.core.result import Step
from drifttui.core.explain.context import Context, clean

TITLE = "Determinism"


def _max_diff(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """The largest difference between two runs' outputs (``elementwise_gap``: an inf or NaN both runs give at the
    same place is no difference, one that only one run gives is an infinite one)."""
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return float("inf")
        worst = max(worst, elementwise_gap(x, y))
    return worst


def _torch_twice(ctx: Context, deterministic: bool) -> float:
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    try:
        args, kwargs = ctx.sample(0)
        a = [to_numpy(t) for t in run_model(ctx.model, args, kwargs)]
        b = [to_numpy(t) for t in run_model(ctx.model, args, kwargs)]
    finally:
        torch.use_deterministic_algorithms(before)
    return _max_diff(a, b)


def _ort_twice(ctx: Context, deterministic: bool) -> float:
    sess = ctx.ort_session("disable", deterministic=deterministic)
    feeds = ctx.feeds(ctx.sample(0))
    return _max_diff(sess.run(None, feeds), sess.run(None, feeds))


def judge(original_drift: bool, det_drift: Optional[bool], variance: dict[str, float],
          atol: float) -> tuple[str, str]:
    noisy = {k: v for k, v in variance.items() if v > 0}
    var_txt = ("runs are bit-identical on both sides" if not noisy else
               "run-to-run variance " + ", ".join(f"{k} {v:.2e}" for k, v in noisy.items()))
    if original_drift and det_drift is False:
        return "fail", f"the drift vanishes with deterministic=True: it is reduction order, not maths ({var_txt})"
    if any(v > atol for v in variance.values()):
        return "fail", f"outputs are not reproducible beyond the tolerance ({var_txt})"
    if noisy:
        return "inconclusive", f"{var_txt}; below the tolerance, and the verdict does not change with determinism"
    if original_drift:
        return "pass", f"{var_txt}; the drift persists with deterministic=True, so it is maths, not reduction order"
    return "pass", f"{var_txt}; no drift with or without determinism"


def run(ctx: Context) -> Step:
    ctx.say("step 5: repeated runs with determinism off and on")
    variance = {
        "torch_nondeterministic": _torch_twice(ctx, False),
        "torch_deterministic": _torch_twice(ctx, True),
        "ort_default_threads": _ort_twice(ctx, False),
        "ort_single_thread": _ort_twice(ctx, True),
    }
    n = ctx.n_samples(3)
    ctx.say("step 5: rerunning the check with deterministic=False and True")
    # both reruns use the same (small) sample count, so "vanishes" is not a sample-count effect
    base = ctx.rerun(deterministic=False, samples=n)
    det = ctx.rerun(deterministic=True, samples=n)
    original = base.verdict == "drift"
    det_drift = det.verdict == "drift"
    verdict, summary = judge(original, det_drift, variance, ctx.result.tolerance.atol)
    o = ctx.result.drift_origin
    if ctx.result.verdict == "drift" and not original and o is not None and o.worst_sample >= n:
        summary += (f" (on the reruns' first {n} sample(s); the run's drift shows on sample {o.worst_sample}, past "
                    "them: not a sign of non-determinism)")
    evidence = {"variance_max_abs": variance, "original_verdict": ctx.result.verdict,
                "rerun_samples": n, "nondeterministic_rerun_verdict": base.verdict,
                "deterministic_verdict": det.verdict,
                "deterministic_origin": det.drift_origin.module if det.drift_origin else None,
                "origin": o.module if o else None}
    suggestion = {"fail": "make reductions deterministic (torch.use_deterministic_algorithms, ORT single thread) "
                          "or widen the tolerance: this is not an export bug"}.get(verdict, "")
    return Step(5, TITLE, verdict, summary, clean(evidence), suggestion, [o.layer] if o else [])
