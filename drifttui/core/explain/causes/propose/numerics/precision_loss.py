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

import math
from typing import Any, Optional

import numpy as np

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
    if b is None or not b.over or call_budget is None or not call_budget.node_ids:
        return None
    over = overflow(ctx, o, b.format)       # values the format cannot hold: its precision, whatever the share
    if not over and (b.share is None or b.share < GENUINE_SHARE):
        return None
    budgets = (ctx.prepared.budgets or ({}, 0.0))[0]
    # a QOperator layer reads float values only with the layers whose quantized outputs it reads
    nodes = {k for c in unit(ctx.index, budgets, o.layer) for k in budgets[c].node_ids}
    names = original_names(ctx.index, nodes)
    forms = converter_forms(ctx.index, nodes, b.format)
    own = layer.local.max_abs.worst if layer.local is not None else None
    loss = "" if b.own_loss_db is None else (" (own loss inf dB)" if b.own_loss_db == float("inf")
                                             else f" (own loss {b.own_loss_db:.1f} dB)")
    share = ("its share of the model outputs' error was not measured" if b.share is None else
             f"causes {b.share:.0%} of the model outputs' error (measured: its {len(nodes)} reduced node(s) computed "
             "in float32 remove that share)" if math.isfinite(b.share) else
             f"its share of the model outputs' error is not measurable (its {len(nodes)} reduced node(s) computed in "
             "float32 alone leave the outputs not finite)")
    message = (f"{display_name(layer.module)} is over its {b.format} precision budget{loss} and {share}"
               f"{'; ' + over['sentence'] if over else ''}: the precision this layer is stored in, not a mistranslation")
    evidence = {"format": b.format, "own budget": b.own_budget, "own loss dB": b.own_loss_db, "share": b.share,
                "own max |d|": own, "keep in float32": names, "converter arguments": forms}
    if over:
        evidence["overflow"] = {k: v for k, v in over.items() if k != "sentence"}
    fix = ("keep it in float32 when you convert (" + "; ".join(f"{t}: {a}" for t, a in forms.items())
           + "); step 4 and `drifttui repair` find and verify the smallest such list for the whole file")
    return Finding("precision", "error", layer.module, names[:8], message, evidence, fix, kind="precision")


def overflow(ctx: Any, o: Any, fmt: str) -> Optional[dict[str, Any]]:
    """Where the origin's torch values pass the file's largest finite number (float16: 65504): the file cannot hold
    them and holds inf (issue #30: a non-finite value is an error, told with its count).  None: they do not, or the
    origin's error is finite (the file holds every value it should)."""
    layer = ctx.result.layers[o.layer]
    counted = [m.nan_mismatch for m in (layer.metrics, layer.local) if m is not None]
    largest = {"float16": float(np.finfo(np.float16).max), "bfloat16": 3.3895313892515355e38}.get(fmt)
    if largest is None or not any(counted):
        return None
    sample = max(o.worst_sample, 0)
    outs = ctx.torch_call_outputs(sample, {o.layer}).get(o.layer, [])
    floats = [a for a in outs if a.size and np.issubdtype(a.dtype, np.floating)]
    peak = max((float(np.abs(a).max()) for a in floats), default=0.0)
    if not peak > largest:
        return None
    past = sum(int(np.count_nonzero(np.abs(a) > largest)) for a in floats)
    return {"sample": sample, "torch max |x|": peak, "largest finite": largest, "elements past it": past,
            "sentence": f"its output overflows {fmt}: torch's values reach {peak:.3g} on sample {sample}, past "
                        f"{fmt}'s largest finite number {largest:.6g} ({past} element(s)), which the file cannot hold"}
