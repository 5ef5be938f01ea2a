"""Step 4 on a reduced-precision file: the precision bisect (which layers to keep in float32).

On a float16 or int8 file the float32 tolerances of the tolerance bisect mean nothing: every
quantized layer "drifts" at 1e-5.  The question there is Polygraphy's ``debug precision``: the
smallest set of layers to keep in float32 for the file to be within its precision budget.  The
search is ``repair``'s (explain/causes/keep_list.py: greedy by measured share, then pruned, each
trial a whole-model check of a patched copy), so the step and ``drifttui repair`` give the same
list; the step writes no file, it prints the list in the converters' forms (``nodes_to_exclude``,
``node_block_list``) for the user to redo their own conversion.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.capture.shares import torch_tensors
from drifttui.core.explain.causes.deliver.keep_list import search, unkept_why
from drifttui.core.explain.context import Context, clean
from drifttui.core.result import Result, Step

TITLE = "Precision bisect (keep in float32)"
TOP = 5           # layers listed by share when the file is within budget


def reduced(result: Result) -> bool:
    """A reduced-precision file with a budget verdict (a float32 file has none)."""
    return result.precision is not None and bool(result.precision.verdict)


def _outputs(result: Result) -> dict[str, Any]:
    worst = max((o.metrics.max_abs.worst for o in result.outputs), default=None)
    top1 = [o.top1_agreement for o in result.outputs if o.top1_agreement is not None]
    return {"output max |d|": worst, "top-1 agreement": min(top1) if top1 else None,
            "verdict": result.precision.verdict if result.precision else result.verdict}


def _costliest(result: Result) -> list[dict[str, Any]]:
    rows = [L for L in result.layers if L.budget is not None and L.budget.format != "float32"]
    rows.sort(key=lambda L: (-(L.budget.share or 0.0), L.budget.own_loss_db or 0.0))
    return [{"layer": L.module or "(root)", "own loss dB": L.budget.own_loss_db, "share": L.budget.share,
             "over": L.budget.over} for L in rows[:TOP]]


def genuine_line(result: Result, genuine: list[str]) -> str:
    """What step 4 and `repair` say of a genuine drift in a reduced-precision file: the origin when
    decide called it one (it is not a precision loss), else the over-budget layers whose share is ~0."""
    fmt, o = result.precision.format, result.drift_origin     # type: ignore[union-attr]
    if result.precision.cause == "genuine drift" and o is not None:  # type: ignore[union-attr]
        return (f"a genuine drift in the {fmt} file at its origin {o.module or '(root)'}, not its precision "
                "(keeping layers in float32 is not the fix: the file computes otherwise than torch at that "
                "precision, by a wrong weight or attribute, a lowering, or a rounding the runtime drops)")
    return (f"over the {fmt} budget at {', '.join(genuine)}, but keeping it in float32 does not remove the "
            "error (share of the output error ~0): a genuine drift, not the precision")


def run(ctx: Context) -> Step:
    result, fmt = ctx.result, ctx.result.precision.format      # type: ignore[union-attr]
    base = {"format": fmt, "budget rule": result.precision.rule, "before": _outputs(result)}  # type: ignore[union-attr]
    if result.precision.verdict != "over budget":               # type: ignore[union-attr]
        return Step(4, TITLE, "pass", f"the {fmt} file is within its precision budget: no layer needs float32",
                    clean({**base, "costliest layers": _costliest(result)}), "")
    checks = [0]

    def recheck(model: Any) -> Result:
        checks[0] += 1
        ctx.say(f"step 4: whole-model check {checks[0]} of a copy with layers kept in float32")
        return ctx.recheck(model)

    ctx.say("step 4: looking for the smallest keep-in-float32 list")
    found = search(ctx.prepared, result, recheck, torch_tensors(ctx.prepared.model, ctx.prepared.calls))
    evidence = {**base, "checks": found.checks}
    if found.genuine:
        return Step(4, TITLE, "fail", genuine_line(result, found.genuine),
                    clean({**evidence, "genuine": found.genuine}),
                    "find its cause with steps 3 and 6 (a wrong weight or attribute, a lowering, a dropped rounding); "
                    "`drifttui repair` tries the verified patches", found.indices)
    if not found.verified:
        return Step(4, TITLE, "inconclusive",
                    f"no keep-in-float32 list brings the file within its {fmt} budget ({found.checks} whole-model "
                    f"checks, up to {len(found.layers)} layer(s) kept){unkept_why(found)}",
                    clean({**evidence, "tried": found.layers}),
                    "convert with a finer scheme (per-channel, reduce_range, or keep the whole model in float32)",
                    found.indices)
    forms = "; ".join(f"{tool}: {arg}" for tool, arg in found.forms.items())
    return Step(4, TITLE, "fail",
                f"keeping {len(found.layers)} layer(s) in float32 brings the {fmt} file within its budget "
                f"(verified: the patched copy checked end to end, {found.checks} check(s)): {', '.join(found.layers)}"
                f"{found.refused_why()}",
                clean({**evidence, "keep in float32": found.layers, "nodes (your float model)": found.nodes,
                       "converter arguments": found.forms, "after": _outputs(found.after)}),
                f"redo your conversion keeping those nodes in float32 ({forms}), or `drifttui repair --out FILE` "
                "for the patched copy", found.indices)
