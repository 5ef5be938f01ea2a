"""What the exporter's ONNX optimizer changed in the origin: the lowered graph before and after it.

When the origin exported alone by the dynamo exporter *without* its ONNX optimizer computes what torch
computes, the optimizer's rewrites made the drift.  Which rewrite is told by comparing the two graphs'
computing nodes (a node fed by constants only is constant folding, which both sides may do otherwise):
the ops the optimized origin lacks (``Mul`` by 1.000002, taken for ``x * 1``) or has in their place (one
``Clip`` for two).  Each op is said with its one-number constant operand, where it has one, so the user
sees the factor or addend a no-op rule took for an identity.  Told before them, a constant the optimizer
folded is compared with what ONNX Runtime computes from the lowering's own constant nodes (``folded_change``: the
folder evaluates them with ONNX's reference implementation in the constants' type, and a float16 norm of a
parameter sums its squares in float16).  The same diff tells, for a small origin, how
another export that computes what torch computes differs from the file (``export_change``).
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

import numpy as np

from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.edits.constants import constant_arrays, scalars

_QUIET = {"Constant", "Identity"}
_LAYOUT = {"Reshape", "Cast", "CastLike", "Shape", "Concat", "Unsqueeze", "Squeeze", "Expand", "Transpose", "Flatten"}
_SAID = 3          # ops told per side
FOLDED = "the optimizer's constant folding computed"     # how folded_change's clause starts
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


def folded_change(optimized: Any, unoptimized: Any, feeds: dict[str, np.ndarray]) -> str:
    """One clause on a constant the optimizer folded whose values are not what ONNX Runtime computes from the
    lowering's own nodes (fed ``feeds``, the unoptimized graph's inputs), "" when every folded constant matches
    (told before the ops the optimizer rewrote: a value that differs is the evidence, a rewrite may be benign).
    A computing node of the optimized graph reads a constant where its counterpart (the same op, the k-th of
    it in both) reads a value the unoptimized graph computes from constants alone; those values are compared:
    ``the optimizer's constant folding computed
    t (ReduceL2, Clip, Div of constants) otherwise than ONNX Runtime computes those nodes: 288 of 512 values
    differ, by up to 0.306 (it folds with ONNX's reference implementation, in the constants' own type,
    float16)``."""
    pairs = _folded_pairs(optimized, unoptimized)
    if not pairs:
        return ""
    try:
        computed = run_ort(unoptimized, feeds, [u for u, _ in pairs])
    except Exception:  # noqa: BLE001 - a lowering ONNX Runtime cannot run alone: nothing to tell
        return ""
    held = constant_arrays(optimized, {o for _, o in pairs})
    for u, o in pairs:
        ref, fold = computed[u], held.get(o)
        if fold is None or ref.shape != fold.shape or ref.dtype.kind != "f":
            continue
        ops, types = _folded_from(unoptimized, u)
        if not ops:             # a number cast or reshaped, not computed: the optimizer's rewrites tell the rest
            continue
        wrong = _differ_values(ref, fold, types)
        if wrong.any():
            gap = np.abs(ref.astype(np.float64) - fold.astype(np.float64))[wrong]
            by = f", by up to {np.nanmax(gap):.3g}" if np.isfinite(gap).any() else ""
            return (f"{FOLDED} {o} ({', '.join(ops)} of constants) otherwise than "
                    f"ONNX Runtime computes those nodes: {int(wrong.sum())} of {ref.size} values differ{by} (it "
                    f"folds with ONNX's reference implementation, in the constants' own type, {', '.join(types)})")
    return ""


def _folded_pairs(optimized: Any, unoptimized: Any) -> list[tuple[str, str]]:
    """(the unoptimized graph's value, the optimized graph's constant) read at the same input of the same
    computing node (matched by op and order), where the optimized one is a constant and the unoptimized one
    a value computed from constants by a node of its own."""
    before, after = _computing(unoptimized), _computing(optimized)
    made = {v: n for n in unoptimized.graph.node for v in n.output if n.op_type != "Constant"}
    live = {v for n in before for v in n.output}
    held = _constant_names(optimized)
    out = []
    theirs = _by_op(after)
    for op, mine in _by_op(before).items():
        if len(mine) != len(theirs.get(op, [])):        # the optimizer dropped or added one: no k-th to face
            continue
        for u, o in zip(mine, theirs[op]):
            for a, b in zip(u.input, o.input):
                if b in held and a in made and a not in live and (a, b) not in out:
                    out.append((a, b))
    return out


def _by_op(nodes: list[Any]) -> dict[str, list[Any]]:
    """Each op's nodes in graph order: two graphs' k-th node of an op face each other."""
    out: dict[str, list[Any]] = {}
    for n in nodes:
        out.setdefault(n.op_type, []).append(n)
    return out


def _differ_values(ref: np.ndarray, fold: np.ndarray, types: list[str]) -> np.ndarray:
    """The elements where the folded constant is not ONNX Runtime's value: a non-finite on one side only, or
    apart by more than a few roundings of the narrowest float type it is computed in (``types``: its sources')
    at the tensor's scale."""
    r, f = ref.astype(np.float64), fold.astype(np.float64)
    finite = np.isfinite(r) & np.isfinite(f)
    scale = np.abs(r[np.isfinite(r)]).max() if np.isfinite(r).any() else 0.0
    eps = max([float(np.finfo(ref.dtype).eps)] + [float(np.finfo(t).eps) for t in types
                                                  if t in ("float16", "float32", "float64")])
    return (np.isfinite(r) != np.isfinite(f)) | (finite & (np.abs(r - f) > 4 * eps * scale))


def _folded_from(model: Any, value: str) -> tuple[list[str], list[str]]:
    """The op types of the nodes ``value`` is computed from, in graph order (a reduction first among them, at most
    _SAID and a count), and the float element types of the constants they read."""
    from onnx import helper

    made = {v: n for n in model.graph.node for v in n.output}
    inits = {t.name: t.data_type for t in model.graph.initializer}
    todo, seen = [value], set()
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(i for i in (made[v].input if v in made else []) if i)
    ops = list(dict.fromkeys(n.op_type for n in model.graph.node
                             if n.op_type not in _QUIET | _LAYOUT and any(o in seen for o in n.output)))
    ops.sort(key=lambda op: not op.startswith("Reduce"))
    said = ops[:_SAID] + ([f"{len(ops) - _SAID} more"] if len(ops) > _SAID else [])
    inits.update({n.output[0]: n.attribute[0].t.data_type for n in model.graph.node
                  if n.op_type == "Constant" and n.attribute and n.attribute[0].HasField("t")})
    types = sorted({d.name for v in seen if v in inits
                    if (d := helper.tensor_dtype_to_np_dtype(inits[v])).kind == "f"})
    return said, types or ["unknown"]


def _constant_names(model: Any) -> set[str]:
    return {t.name for t in model.graph.initializer} | {o for n in model.graph.node if n.op_type == "Constant"
                                                        for o in n.output}



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
