"""Drift class ``fusion``: ONNX Runtime graph optimisations changing the numbers.

Uses the optimisation-level sweep of step 3 (``steps/optlevels.py``): final outputs at
disable / basic / extended / all against PyTorch, and the op types ORT fused in.
"""
from __future__ import annotations

from drifttui.core.result import Finding
from drifttui.core.explain.context import Context, clean
from drifttui.core.explain.sweep import opt_sweep

CHECK = "fusion"
STATIC = False


def from_sweep(sweep: dict, origin_module: str | None, origin_nodes: list[str]) -> list[Finding]:
    out: list[Finding] = []
    levels = sweep["levels"]
    base = levels.get("disable", {})
    fused = sweep.get("fused_op_types", [])
    ev = {"levels": {lv: {k: r.get(k) for k in ("final_max_abs", "final_fails", "origin_max_abs", "new_op_types")}
                     for lv, r in levels.items()}, "fused_op_types": fused}
    worse = [lv for lv, r in levels.items() if r.get("final_fails") and not base.get("final_fails")]
    better = [lv for lv, r in levels.items() if not r.get("final_fails") and base.get("final_fails")]
    if worse:
        out.append(Finding(CHECK, "warning", None, [],
                           f"the final outputs drift at ORT level(s) {', '.join(worse)} but not with optimisations "
                           f"off: a fusion changes the numbers (fused ops: {', '.join(fused) or 'none seen'})",
                           clean(ev), "deploy with the level that agrees (SessionOptions.graph_optimization_level), "
                                      "or disable the offending fusion (session.disable_specified_optimizers)"))
    elif better:
        out.append(Finding(CHECK, "info", None, [],
                           f"with optimisations at {', '.join(better)} the final outputs pass: the fused kernels "
                           "compute differently from the unfused graph", clean(ev),
                           "localise with optimisations off (drifttui's default), deploy at the level you test"))
    if sweep.get("origin_error_changes_at") and origin_module is not None:
        out.append(Finding(CHECK, "info", origin_module, origin_nodes,
                           f"the origin's error changes with the ORT level ({', '.join(sweep['origin_error_changes_at'])})",
                           clean(ev), "compare the fused and unfused kernels for this op"))
    if not out and fused:
        out.append(Finding(CHECK, "info", None, [],
                           f"ORT fuses {', '.join(fused[:8])} at higher levels; outputs agree at every level",
                           clean(ev), ""))
    return out


def check(ctx: Context) -> list[Finding]:
    L = ctx.origin_layer
    return from_sweep(opt_sweep(ctx), L.module if L else None, L.onnx_nodes if L else [])
