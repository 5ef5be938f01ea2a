"""Step 4: tolerance bisect.

Rerun (few samples, the origin's worst among them: ``Context.n_samples``; the exported file reused) with atol = rtol = T for T from 1e-3 to 1e-7 and
report the origin at each.  On a reduced-precision file (float16, int8) the float32 tolerances mean
nothing; there the step is the precision bisect (steps/precision.py: the keep-in-float32 list).  When a tighter tolerance that is still above float32 noise
(>= 1e-5) names an *earlier* module, the reported origin may only amplify an error that
starts there.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.result import Step, display_name
from drifttui.core.explain.context import Context, clean
from drifttui.core.explain.steps import precision

TITLE = "Tolerance bisect"
SWEEP = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
NOISE_FLOOR = 1e-5     # below this float32 noise between torch and ORT fails by itself


def judge(rows: list[dict[str, Any]], origin_layer: Any, origin_module: Any) -> tuple[str, str, list[int]]:
    """-> (verdict, summary, layers) from sweep rows {tolerance, origin, origin_layer}."""
    above = [r for r in rows if r["tolerance"] >= NOISE_FLOOR]
    earlier = [r for r in above if r["origin_layer"] is not None
               and (origin_layer is None or r["origin_layer"] < origin_layer)]
    named = sorted({r["origin_layer"] for r in rows if r["origin_layer"] is not None})
    if earlier:
        first = min(earlier, key=lambda r: r["origin_layer"])
        where = (f"earlier than {display_name(origin_module)}" if origin_module is not None
                 else "although the run was clean")
        return ("fail", f"at tolerance {first['tolerance']:g} the origin moves to {display_name(first['origin'])} ({where}): "
                        "a small error starts there and is amplified later", [first["origin_layer"]] + named)
    noise = [r for r in rows if r["tolerance"] < NOISE_FLOOR and r["origin_layer"] is not None
             and (origin_layer is None or r["origin_layer"] < origin_layer)]
    tail = ""
    if noise:
        tail = (f"; below {NOISE_FLOOR:g} float32 noise alone fails (origin {display_name(noise[0]['origin'])} at "
                f"{noise[0]['tolerance']:g}), which is expected")
    if origin_module is None:
        clean_down = [r["tolerance"] for r in rows if r["origin_layer"] is None and r["verdict"] == "ok"]
        low = min(clean_down) if clean_down else None
        return ("pass", (f"no drift down to tolerance {low:g}" if low else "no origin at any tolerance") + tail,
                named)
    stable = [r["tolerance"] for r in above if r["origin"] == origin_module]
    if not stable:      # the rerun's samples do not show the drift at any tolerance
        return ("pass", f"no tolerance down to {NOISE_FLOOR:g} names a module earlier than "
                        f"{display_name(origin_module)} on the rerun's samples" + tail, named)
    return ("pass", f"the origin {display_name(origin_module)} is stable across tolerances "
                    f"{', '.join(f'{t:g}' for t in stable)} (it does not move earlier)" + tail, named)


def _nonfinite(r: Any, o: Any) -> Optional[int]:
    """The origin's elements inf or NaN on one side only (its max_abs is then inf), None when none."""
    layer = next((L for L in r.layers if o is not None and L.index == o.layer), None)
    n = getattr(layer.metrics, "nan_mismatch", 0) if layer is not None and layer.metrics is not None else 0
    return n or None


def run(ctx: Context) -> Step:
    if precision.reduced(ctx.result):
        return precision.run(ctx)
    n = ctx.n_samples(2)
    rows = []
    for k, t in enumerate(SWEEP):
        ctx.say(f"step 4: tolerance {t:g}", k, len(SWEEP))
        r = ctx.rerun(atol=t, rtol=t, samples=n)
        o = r.drift_origin
        drifting = sum(1 for L in r.layers if L.status == "drift")
        rows.append({"tolerance": t, "verdict": r.verdict, "origin": o.module if o else None,
                     "origin_layer": o.layer if o else None, "origin_max_abs": o.max_abs if o else None,
                     "origin_nonfinite": _nonfinite(r, o), "drifting_layers": drifting})
    o = ctx.result.drift_origin
    verdict, summary, layers = judge(rows, o.layer if o else None, o.module if o else None)
    evidence = {"samples": n, "sweep": rows, "noise_floor": NOISE_FLOOR,
                "current": {"atol": ctx.result.tolerance.atol, "rtol": ctx.result.tolerance.rtol,
                            "origin": o.module if o else None}}
    suggestion = {"fail": "inspect the earlier module first (steps 3 and 6 on it); the reported origin may only "
                          "amplify its error",
                  "pass": ""}.get(verdict, "")
    return Step(4, TITLE, verdict, summary, clean(evidence), suggestion, layers)
