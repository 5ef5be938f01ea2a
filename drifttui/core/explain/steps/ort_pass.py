"""Step 3's pass bisect: when the origin (or the outputs) drift at an ORT level above disable and
not at disable, the transformer that does it (``runtime.passes.pass_bisect``), on the origin's own
nodes fed torch's inputs (local runs), or on the whole graph when the origin's nodes alone do not
reproduce the drift (a fusion across the origin's boundary)."""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.explain.causes.locate.case import origin_case
from drifttui.core.explain.context import Context
from drifttui.core.explain.sweep import opt_sweep
from drifttui.core.result import display_name
from drifttui.core.runtime.passes.pass_bisect import PassResult, Probe, bisect_ort, drifting_level, offline_check

LEVELS_ABOVE = ("basic", "extended", "all")


def _origin_probe(ctx: Context) -> Optional[Probe]:
    case = origin_case(ctx)
    if case is None or not case.expected:
        return None
    tol = ctx.result.tolerance
    return Probe(case.model.SerializeToString(), [case.feeds], [case.expected], tol.atol, tol.rtol,
                 f"the origin's nodes ({display_name(case.module)})")


def outputs_probe(ctx: Context) -> Probe:
    tol = ctx.result.tolerance
    names = ctx.index.graph_outputs
    n = ctx.n_samples(2)
    feeds = [ctx.feeds(ctx.sample(i)) for i in range(n)]
    expected = [dict(zip(names, ctx.torch_outputs(i))) for i in range(n)]
    return Probe(ctx.onnx_path(), feeds, expected, tol.atol, tol.rtol, "the model outputs")


def ort_pass(ctx: Context) -> Optional[PassResult]:
    """The pass bisect's answer, or None when no level above disable changes the verdict (cached)."""
    if "ort_pass" in ctx.cache:
        return ctx.cache["ort_pass"]
    rows = opt_sweep(ctx)["levels"]
    out: Optional[PassResult] = None
    level, safe = drifting_level(rows, "origin_fails")
    if level:
        ctx.say(f"step 3: which ONNX Runtime pass moves the origin at level {level}")
        probe = _origin_probe(ctx)
        if probe is not None:
            out = bisect_ort(probe, level, safe)
    if out is None or not out.reproduced:
        level_o, safe_o = drifting_level(rows, "final_fails")
        if level_o or level:
            ctx.say(f"step 3: which ONNX Runtime pass moves the outputs at level {level_o or level}")
            out = bisect_ort(outputs_probe(ctx), level_o or level, safe_o or safe)
    ctx.cache["ort_pass"] = out
    return out


def offline_pass(ctx: Context) -> Optional[PassResult]:
    """A deployed file saved by ORT's offline optimizer (``--reference-onnx`` names the file it was
    made from): the lowest level at which ORT, run on the reference file, drifts like the deployed
    file, the pass that does it, and the reference re-optimised without it (cached; None when the
    reference does not reproduce the drift at any level, or drifts at disable itself)."""
    if "ort_offline_pass" in ctx.cache:
        return ctx.cache["ort_offline_pass"]
    out: Optional[PassResult] = None
    ref = ctx.cfg.reference_onnx
    if ref:
        probe = outputs_probe(ctx)
        probe.payload = str(ref)
        probe.where = "the model outputs of the reference file optimised by ORT"
        if not probe.measure("disable")[0]:
            safe = "disable"
            for level in LEVELS_ABOVE:
                if probe.measure(level)[0]:
                    ctx.say(f"step 3: which ONNX Runtime pass, run offline at level {level}, makes the drift")
                    out = bisect_ort(probe, level, safe)
                    if out.culprits and out.verified:
                        out.offline = offline_check(str(ref), probe, level, out.culprits, ctx.workdir)
                    break
                safe = level
    ctx.cache["ort_offline_pass"] = out
    return out


def evidence(res: Optional[PassResult]) -> dict[str, Any]:
    return res.to_dict() if res is not None else {}
