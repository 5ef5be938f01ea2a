"""A 0-dim float32 tensor operand of a float16 / bfloat16 arithmetic op, held as torch holds it (issue 30 point 8;
a generic patch, no catalogue entry).

``y_half / step`` with ``step`` a 0-dim float32 tensor (a learned quantiser step after ``abs().clamp_min()``, a
float32 parameter under ``torch.autocast``): a 0-dim tensor does not set the result's type (float16), and torch's
CPU kernels read such an operand in their opmath type (``iter.original_scalar_value<opmath_t>``: float32), so the
quotient is ``y / step`` in float32, rounded once.  The TorchScript exporter casts the operand to float16 first
(``Cast(step, float16)`` then a float16 ``Div``): one rounding of ``step`` moves every quotient, and a step
function after it (``round``, ``floor``) turns that into whole steps.

Where ``opmath.py``'s ``per_op`` applies to the origin and a Cast to the low type in it reads a 0-dim float32 value
that only ``Mul`` / ``Div`` / ``Add`` / ``Sub`` nodes read, one more ``per_op`` patch leaves those Casts' outputs
unrounded (the arithmetic reads the float32 value, as torch does) and rounds every other output as torch rounds each
op (form ``wrapped``: a spec of its own, not deduplicated with ``per_op``).  Class ``dtype``, kind ``export``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.base.dtypes import LOW_FLOAT_ELEMS
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.patches import Patch

ARITH = ("Mul", "Div", "Add", "Sub")


def _wrapped_casts(case: Case, names: set[str]) -> list[Any]:
    """The Casts to the low type among ``names`` whose input is a 0-dim float32 value read only by arithmetic."""
    casts = [n for n in case.model.graph.node if n.name in names and n.op_type == "Cast"
             and any(a.name == "to" and a.i in LOW_FLOAT_ELEMS for a in n.attribute)]
    if not casts:
        return []
    readers: dict[str, list[Any]] = {}
    for n in case.model.graph.node:
        for v in n.input:
            readers.setdefault(v, []).append(n)
    _, known = picked_values(case, lambda n: n in casts)
    out = []
    for c in casts:
        v = known.get(c.input[0])
        used = readers.get(c.output[0], [])
        if v is not None and np.asarray(v).ndim == 0 and np.asarray(v).dtype == np.float32 and used \
                and all(r.op_type in ARITH and r.name in names and len(r.input) == 2 for r in used):
            out.append(c)
    return out


def with_wrapped(case: Case, opmaths: list[Patch]) -> list[Patch]:
    """``opmaths``, then ``per_op`` with the wrapped operands left in float32 where the origin has one."""
    per_op = next((p for p in opmaths if p.spec.get("form") == "per_op"), None)
    if per_op is None:
        return opmaths
    wrapped = _wrapped_casts(case, set(per_op.spec["nodes"]))
    if not wrapped:
        return opmaths
    outs = {c.output[0] for c in wrapped}
    spec = {**per_op.spec, "form": "wrapped", "round": [v for v in per_op.spec["round"] if v not in outs]}
    ops = sorted({f"{r.op_type} {r.name}" for r in case.model.graph.node if outs & set(r.input)})
    why = (f"{', '.join(ops)} read{'s' if len(ops) == 1 else ''} a 0-dim float32 tensor cast to float16 first "
           f"({', '.join(c.name for c in wrapped)}): torch's mul / div / add / sub read a 0-dim operand at their "
           "opmath precision (float32) and round only the result; and " + per_op.why[0].lower() + per_op.why[1:]
           + "; with that operand left in float32 as well, the file computes what torch computes")
    fix = ("compute that arithmetic in float32 in the model (`(y.float() / step).to(y.dtype)`), or let `drifttui "
           "repair` write the nodes in float32 with the operand unrounded")
    return [*opmaths, Patch(spec, "dtype", why, fix, "export", module=case.module, nodes=list(per_op.nodes))]
