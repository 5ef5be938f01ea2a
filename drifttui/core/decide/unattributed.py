"""Layers that fail the tolerance with no module owning the error: ``unattributed``, with the note that
says why (decide calls ``attribute_unowned`` once, after the statuses; the one place this is decided)."""
from __future__ import annotations

from typing import Optional

from drifttui.core.base.dtypes import LOW_PRECISION
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import INHERITED, UNATTRIBUTED, UNMAPPED
from drifttui.core.runtime.torch_hooks import Call


_LOW = tuple(LOW_PRECISION)
_REDUCTIONS = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp",
               "Softmax", "LogSoftmax", "MatMul", "Gemm", "Conv", "LayerNormalization",
               "BatchNormalization", "InstanceNormalization", "GroupNormalization", "Einsum", "CumSum"}

_DISCRETE = {"Floor", "Ceil", "Round", "ArgMax", "ArgMin", "TopK"}


def attribute_unowned(calls: list[Call], plan: Plan, statuses: list[str], origin: Optional[int],
                      op_types: Optional[dict[int, list[str]]] = None) -> list[str]:
    """Layers that fail with no module owning the error become ``unattributed``, with a note.

    With no origin, an ``inherited`` layer inherits from nothing: its own nodes, fed with the
    PyTorch-side inputs, agree, and no earlier module fails.  The note says why that happens:
    float32 noise upstream flipping roundings at a precision cast (a float16/bfloat16 value
    downstream of a float32 one), or an ill-conditioned reduction amplifying rounding noise.
    Mutates ``statuses`` (never the plan: a re-decision must equal a fresh run); returns the notes.  The one place this is decided.
    """
    if origin is not None:
        return []
    unowned = [i for i, s in enumerate(statuses) if s == INHERITED]
    if not unowned:
        return []
    cast_at = next((c.index for c in calls if _casts(calls, c)), None)
    for i in unowned:
        statuses[i] = UNATTRIBUTED
    names = ", ".join(calls[i].module or "(root)" for i in unowned[:5])
    stepped = cast_at is None and any(_discretises(calls[i], (op_types or {}).get(i, [])) for i in unowned)
    more = f" and {len(unowned) - 5} more" if len(unowned) > 5 else ""
    if cast_at is not None:
        why = (f"upstream float32 rounding noise is amplified at a precision cast (at "
               f"{calls[cast_at].module or '(root)'}: {_casts(calls, calls[cast_at])}), which flips low-precision roundings")
    elif stepped:
        why = ("rounding noise crosses an integer step in them (a conversion to integers, a floor, a rounding, an "
               "argmax, or a lookup by integers computed from floats), where a difference in the last bit becomes "
               "a whole unit")
    elif any(op in _REDUCTIONS for i in unowned for op in (op_types or {}).get(i, [])):
        why = "rounding noise is amplified by a reduction (a long sum, softmax or normalisation) in them"
    else:
        why = "rounding noise accumulated upstream, below every module's own tolerance"
    advice = ("widen the tolerance for low-precision layers, or compute the block in float32, if the size matters"
              if not stepped else "no tolerance holds a whole step: convert values that sit away from the step "
              "(round to a coarser grid first), or compare the integers themselves, if the size matters")
    return [f"{len(unowned)} layer(s) fail the tolerance with no module owning the error: {names}{more}. "
            f"Their own nodes, fed with the PyTorch-side inputs, agree; {why}. They are 'unattributed', not drift: "
            f"{advice}"]


def _discretises(c: Call, ops: list[str]) -> bool:
    """The call turns floats into whole steps: an integer output from a float input, or an op that rounds; or it
    looks values up by integers alone (an ``Embedding`` below the root): integers carry no rounding noise, so when
    its own nodes agree and its output still fails, the integers it read differ, and were computed from floats."""
    float_in = any(r.dtype.startswith(("float", "bfloat")) for r in c.inputs)
    int_in = any(r.dtype.startswith(("int", "uint")) for r in c.inputs)
    int_out = any(r.dtype.startswith(("int", "uint")) for r in c.outputs)
    lookup = c.parent is not None and int_in and not float_in
    return (float_in and int_out) or lookup or any(op in _DISCRETE for op in ops)


def _casts(calls: list[Call], c: Call) -> str:
    """'float32 -> float16' when floating precision changes inside the call, or between the call
    that produced one of its inputs and the call itself (a functional ``.half()`` between them)."""
    def fl(dt: str) -> bool:
        return dt.startswith(("float", "bfloat"))
    ins = {r.dtype for r in c.inputs if fl(r.dtype)}
    outs = {r.dtype for r in c.outputs if fl(r.dtype)}
    if ins and outs and ins != outs and (ins | outs) & set(_LOW):
        return f"{'/'.join(sorted(ins))} -> {'/'.join(sorted(outs))}"
    for r in c.inputs:
        if r.producer is None or not fl(r.dtype):
            continue
        ci, pos = r.producer
        src = calls[ci].outputs[pos].dtype if pos < len(calls[ci].outputs) else r.dtype
        if fl(src) and src != r.dtype and {src, r.dtype} & set(_LOW):
            return f"{src} -> {r.dtype}"
    root = calls[0]
    wide = {r.dtype for r in root.inputs + root.outputs} - set(_LOW)
    low = sorted({r.dtype for r in c.inputs + c.outputs} & set(_LOW))
    if c.parent is not None and low and any(fl(d) for d in wide):
        # a functional cast (``x.half()``) between calls leaves no producer link: the model is
        # float32 at its boundary and this call computes in low precision
        return f"{'/'.join(sorted(d for d in wide if fl(d)))} model, {'/'.join(low)} inside"
    return ""


def unmapped_before(calls: list[Call], statuses: list[str], origin: Optional[int]) -> list[str]:
    """A note when modules that ran before the origin are unmapped: their own error is not
    measured, so a drift that starts in one of them shows first at the origin (an LSTM whose ONNX
    output has a num_directions axis, blamed on the GRU after it)."""
    if origin is None:
        return []
    o = calls[origin]
    ancestors = set()
    p = o.parent
    while p is not None:
        ancestors.add(p)
        p = calls[p].parent
    before = [c for c in calls if statuses[c.index] == UNMAPPED and c.index not in ancestors
              and c.end_order < o.end_order]
    if not before:
        return []
    names = ", ".join(c.module or "(root)" for c in before[:4]) + (" ..." if len(before) > 4 else "")
    return [f"{len(before)} module call(s) that ran before the origin are unmapped ({names}): their own error "
            f"is not measured, so a drift that starts there shows first at {o.module or '(root)'}; see the "
            "coverage for why they are unmapped"]
