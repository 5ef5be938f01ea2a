"""What the exporter's ONNX optimizer changed in the origin: the lowered graph before and after it.

When the origin exported alone by the dynamo exporter *without* its ONNX optimizer computes what torch
computes, the optimizer's rewrites made the drift.  Which rewrite is told by comparing the two graphs'
computing nodes (a node fed by constants only is constant folding, which both sides may do otherwise):
the ops the optimized origin lacks (``Mul`` by 1.000002, taken for ``x * 1``) or has in their place (one
``Clip`` for two).  Each op is said with its one-number constant operand, where it has one, so the user
sees the factor or addend a no-op rule took for an identity.  The same diff tells, for a small origin, how
another export that computes what torch computes differs from the file (``export_change``).
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from drifttui.core.explain.causes.propose.edits.constants import scalars

_QUIET = {"Constant", "Identity"}
_SAID = 3          # ops told per side
_SMALL = 40        # computing nodes of an origin whose diff with another export is told
_FEW = 4           # ops that may differ between the two for the diff to be told


def optimizer_change(optimized: Any, unoptimized: Any, who: str = "the optimizer") -> str:
    """One clause, "" when the two graphs compute with the same ops: ``the optimizer left out Mul
    (x * 1.000002)`` / ``... put Clip (0 .. -0.5) where the lowering has Clip, Relu``; ``who`` the pass
    that made ``optimized`` from ``unoptimized``."""
    before, after = _computing(unoptimized), _computing(optimized)
    gone, came = _differ(before, after)
    if not gone and not came:
        return ""
    lost = _told(unoptimized, before, gone)
    if not came:
        return f"{who} left out {lost}"
    made = _told(optimized, after, came)
    return f"{who} put {made} where the lowering has {lost}" if gone else f"{who} added {made}"


def made_ops(optimized: Any, unoptimized: Any) -> set[str]:
    """The op types the pass put into ``optimized`` that ``unoptimized`` computes without (a fused node's)."""
    return set(_differ(_computing(unoptimized), _computing(optimized))[1])


def export_change(origin: Any, witness: Any, who: str, named: Iterable[str]) -> str:
    """For another export that computes what torch computes (``who``: "the TorchScript exporter"), one
    clause on the ops where the file's origin and it part: only where that is a handful of ops in an
    origin of a few dozen, one of them the op of the node already named wrong (``named``; beyond, two
    exporters' graphs differ everywhere, a Gemm for a MatMul and an Add, and the diff tells nothing):
    ``the file computes Clip (0 .. -0.5) where the TorchScript exporter computes Clip, Relu``."""
    mine, theirs = _computing(origin), _computing(witness)
    gone, came = _differ(theirs, mine)
    if (not set(named) & set(gone | came) or len(mine) > _SMALL
            or sum(gone.values()) + sum(came.values()) > _FEW):
        return ""
    lost = _told(witness, theirs, gone) if gone else "nothing"
    made = _told(origin, mine, came) if came else "nothing"
    return f"the file computes {made} where {who} computes {lost}"


def _differ(before: list[Any], after: list[Any]) -> tuple[Counter, Counter]:
    ops_before, ops_after = Counter(n.op_type for n in before), Counter(n.op_type for n in after)
    return ops_before - ops_after, ops_after - ops_before


def _computing(model: Any) -> list[Any]:
    """The nodes fed by at least one value computed from the graph's inputs (not constant folding).  A
    CastLike reads its second input for the type alone: a constant cast like ``x`` is still a constant."""
    live = {i.name for i in model.graph.input} - {t.name for t in model.graph.initializer}
    out = []
    for n in model.graph.node:
        data = n.input[:1] if n.op_type == "CastLike" else n.input
        if not any(i in live for i in data):
            continue
        live.update(n.output)
        if n.op_type not in _QUIET:
            out.append(n)
    return out


def _told(model: Any, nodes: list[Any], which: Counter) -> str:
    """The ops of ``which`` in graph order, each with its one-number operand; the same words said once
    with their count (``2 x SoftmaxCrossEntropyLoss``), at most _SAID of them."""
    words: Counter = Counter()
    left, count = Counter(which), sum(which.values())
    numbers = _numbers(model) if nodes else {}
    for n in nodes:
        if left[n.op_type] <= 0:
            continue
        left[n.op_type] -= 1
        consts = [numbers[i] for i in n.input if i in numbers]
        words[f"{n.op_type} ({_operands(n.op_type, consts)})" if consts else n.op_type] += 1
    said = list(words)[:_SAID]
    more = count - sum(words[w] for w in said)
    return ", ".join(w if words[w] == 1 else f"{words[w]} x {w}" for w in said) + (f" and {more} more" if more > 0 else "")


def _operands(op: str, consts: list[float]) -> str:
    sign = {"Mul": "x * ", "Add": "x + ", "Sub": "x - ", "Div": "x / ", "Pow": "x ** "}.get(op)
    if sign is not None and len(consts) == 1:
        return f"{sign}{consts[0]:.7g}"
    return " .. ".join(f"{c:.7g}" for c in consts)


def _numbers(model: Any) -> dict[str, float]:
    """Value name -> the one number of each one-element float constant of the graph (constants.scalars:
    initializers and Constants), and of the Casts and Identities of one (the unoptimized lowering casts
    its Python numbers)."""
    out = scalars(model)
    for n in model.graph.node:          # in graph order: a Cast of a Cast follows its input
        if n.op_type in ("Cast", "CastLike", "Identity") and n.input and n.input[0] in out:
            out.update({o: out[n.input[0]] for o in n.output})
    return out
