"""The origin of an over-budget reduced-precision file is a precision loss: say so, try no patch.

In a float16 or int8 file, an origin over its budget whose reduced nodes cause most of the output
error (its measured share, capture/shares.py: computing them in float32 removes that error) is
paying for its precision, not computing the wrong maths.  The mistranslation patches and the
re-export would "verify" there for the wrong reason (a float32 re-export of a quantized layer
always removes its quantization error), so the finding is the precision's, with the nodes to keep
in float32 in the converter's form.  An origin whose share is about 0 is a genuine drift (a wrong
weight or attribute): this module returns nothing and the usual causes run.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.onnx.edit.keep.converter_forms import converter_forms, original_names
from drifttui.core.onnx.edit.keep.qoperator import unit
from drifttui.core.base.tolerance import GENUINE_SHARE  # noqa: F401  (one source: decide reads it too)
from drifttui.core.result import Finding, display_name


def precision_finding(ctx: Any) -> Optional[Finding]:
    """The finding for an origin that pays for the file's precision; None: not that case."""
    result, o = ctx.result, ctx.result.drift_origin
    if o is None or result.precision is None or not result.precision.verdict or o.layer >= len(result.layers):
        return None
    layer = result.layers[o.layer]
    b = layer.budget
    call_budget = ((ctx.prepared.budgets or ({}, 0.0))[0]).get(o.layer)
    if b is None or not b.over or b.share is None or b.share < GENUINE_SHARE or call_budget is None \
            or not call_budget.node_ids:
        return None
    budgets = (ctx.prepared.budgets or ({}, 0.0))[0]
    # a QOperator layer reads float values only with the layers whose quantized outputs it reads
    nodes = {k for c in unit(ctx.index, budgets, o.layer) for k in budgets[c].node_ids}
    names = original_names(ctx.index, nodes)
    forms = converter_forms(ctx.index, nodes, b.format)
    own = layer.local.max_abs.worst if layer.local is not None else None
    loss = "" if b.own_loss_db is None else (" (own loss inf dB)" if b.own_loss_db == float("inf")
                                             else f" (own loss {b.own_loss_db:.1f} dB)")
    message = (f"{display_name(layer.module)} is over its {b.format} precision budget{loss} and causes "
               f"{b.share:.0%} of the model outputs' error (measured: its {len(nodes)} reduced node(s) computed "
               "in float32 remove that share): the precision this layer is stored in, not a mistranslation")
    evidence = {"format": b.format, "own budget": b.own_budget, "own loss dB": b.own_loss_db, "share": b.share,
                "own max |d|": own, "keep in float32": names, "converter arguments": forms}
    fix = ("keep it in float32 when you convert (" + "; ".join(f"{t}: {a}" for t, a in forms.items())
           + "); step 4 and `drifttui repair` find and verify the smallest such list for the whole file")
    return Finding("precision", "error", layer.module, names[:8], message, evidence, fix, kind="precision")
