"""The opmath counterfactual: the origin's float16 / bfloat16 nodes computed in float32, rounded where torch
rounds (issue 30 point 2; a generic patch, no catalogue entry).

torch's CPU computes float16 and bfloat16 ops in float32 (its "opmath" type) and rounds each op's output once; a
composite op (``var``, ``softmax``, ``layer_norm``, a mean of squares) keeps its intermediates in float32.  A file
can differ in two ways, both measured on a float16 ``(x.half() + 30).var(-1)``:

* ONNX Runtime's CPU runs float16 ops it has no kernel for through Casts it inserts, and removes the rounding of
  a ``Cast(float -> float16)`` whose reader it casts back to float32 (microsoft/onnxruntime#8787, #9915): the
  ``Add`` after ``x.half()`` reads the float32 ``x``, and rounds ``x + 30`` where torch rounds ``x`` first;
* an exporter lowers a composite op to several float16 nodes, each rounded (the TorchScript ``var``: mean,
  deviation, square, mean, each to float16; its variance ~1% off).

Up to four patches (``onnx/edit/numerics/opmath.py``), the first that verifies wins: every low-precision node of
the origin computed in float32 and rounded at its own output with explicit Casts ONNX Runtime keeps (``per_op``: the
rounding the runtime drops), then the same with the nodes that read a low-precision reduction's input (the
rest of that composite op) left in float32 up to the set's boundary (``grouped``: torch's opmath), then every
node in float32, rounded only by the model's own conversions (its Casts to the low type) and at the set's boundary
(``whole``: one torch op lowered to several nodes with no reduction last, a float16 ``logcumsumexp`` as ReduceMax,
Sub, Exp, CumSum, Log, Add, whose rounded Exp loses the small terms torch keeps in float32), then, in a file that
records the FX call each node translates (a dynamo file), every node in float32 rounded where a call's nodes end
(``per_call``: such an op amid other float16 ops, a minGRU's ``logcumsumexp`` between its ``softplus`` and ``exp``;
judged at the precision budget a file's float16 node is held to, 4 ulps of the low type, ``spec["rtol"]``: inside
the call torch's kernel and the lowering's formula both compute float32, and their last-bit differences can flip a
rounding that the ops after it amplify; ``per_op`` is judged there too, but passes at that budget only where it
removed ``GAIN`` times what it leaves, ``locate/evaluate.judged_error``: a TorchScript file records no call, and its
``rsqrt`` as ``Div(1, Sqrt)`` flips a float16 rounding torch's fused kernel makes otherwise).  Class ``dtype`` (the precision the ops compute in), kind ``runtime`` /
``export``.  ``repair`` applies it.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from onnx import helper

from drifttui.core.base.dtypes import LOW_PRECISION_ELEM
from drifttui.core.base.tolerance import K_EPS
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import numpy_lacks, picked_values
from drifttui.core.explain.causes.locate.fx_localise import fx_of
from drifttui.core.onnx.edit.numerics.opmath import HELD, LOW
from drifttui.core.onnx.edit.patches import Patch

# ops torch computes as one op over many elements (its intermediates stay in opmath)
REDUCING = ("ReduceMean", "ReduceSum", "ReduceSumSquare", "ReduceL2", "ReduceL1", "ReduceLogSumExp", "ReduceProd",
            "Softmax", "LogSoftmax", "LayerNormalization", "CumSum")
UPSTREAM = "microsoft/onnxruntime#8787"
# a per_op rounding judged at the float16 budget passes only where it removed this many times what it leaves
GAIN = 16.0
LOW_NAMES = {10: "float16", 16: "bfloat16"}


def _elem(a: Any) -> int:
    return int(helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype))


def _low_nodes(case: Case) -> tuple[list[Any], dict[str, int], dict[str, np.ndarray]]:
    """The origin's nodes whose outputs are all float16 / bfloat16, each value's element type (a bfloat16 value is
    read as float32: its declared type counts), and the values read."""
    nodes, known = picked_values(case, lambda n: bool(n.output) and n.op_type not in HELD
                                 and not any(a.type == 5 for a in n.attribute if a.name in ("then_branch", "body")))
    lacks = numpy_lacks(case.model, case.elem_types) if nodes else {}
    types = {v: lacks.get(v, _elem(a)) for v, a in known.items()}
    low = [n for n in nodes if all(o in known and types[o] in LOW for o in n.output if o)
           and any(o for o in n.output)]
    return low, types, known



def computes_low(case: Case) -> bool:
    """Whether the origin computes in float16 / bfloat16 (a node whose outputs are all of the low type)."""
    return bool(_low_nodes(case)[0])

def _grouped(low: list[Any]) -> set[str]:
    """The outputs of the nodes that read a low-precision reduction's input, through the set (a composite op)."""
    by_input: dict[str, list[Any]] = {}
    for n in low:
        for v in n.input:
            by_input.setdefault(v, []).append(n)
    seen: set[str] = set()
    todo = [n.input[0] for n in low if n.op_type in REDUCING and n.input]
    while todo:
        for n in by_input.get(todo.pop(), []):
            if n.name not in seen:
                seen.add(n.name)
                todo.extend(o for o in n.output if o)
    return {o for n in low if n.name in seen for o in n.output if o}


def _per_call(low: list[Any]) -> set[str]:
    """The values torch rounds when the file records the FX call each node translates (a dynamo file): every output
    but those read only by nodes of the same call (one torch op lowered to several nodes: torch rounds its result,
    not its steps); empty where no node records its call (a TorchScript file: ``per_op`` is that form)."""
    calls = {n.name: fx_of(n) for n in low}
    if not any(calls.values()):
        return set()
    call_of = {o: (calls[n.name] or (n.name,))[0] for n in low for o in n.output if o}
    readers: dict[str, set[str]] = {}
    for n in low:
        for v in n.input:
            readers.setdefault(v, set()).add((calls[n.name] or (n.name,))[0])
    return {o for o, c in call_of.items() if readers.get(o, {c}) != {c}}


def _lowered_calls(low: list[Any]) -> list[tuple[str, list[Any]]]:
    """The torch calls the file lowers to several of the set's nodes: (the call's target, its nodes), the longest
    lowering first (``aten.logcumsumexp.default``: ReduceMax, Sub, Exp, CumSum, Log, Add)."""
    calls: dict[str, tuple[str, list[Any]]] = {}
    for n in low:
        c = fx_of(n)
        if c is not None:
            calls.setdefault(c[0], (c[1], []))[1].append(n)
    return sorted((c for c in calls.values() if len(c[1]) > 1), key=lambda c: -len(c[1]))


def _converted(low: list[Any]) -> set[str]:
    """The values the model's own conversions make (``x.half()``: a Cast to the low type): the only roundings
    left inside the set when its nodes are one torch op between conversions."""
    return {o for n in low if n.op_type == "Cast" for o in n.output if o}


def _story(ops: list[str], form: str, which: str, low: str, op: Optional[str] = None) -> tuple[str, str, str]:
    """``op``: the torch op the drift starts in (torch_align), named in the fix; None when it cannot be told."""
    if form == "per_op":
        return (f"the origin computes {low} ({which}); ONNX Runtime's CPU runs them through float32 Casts it inserts "
                f"and drops the {low} rounding of a Cast whose reader it casts back to float32, so a value torch "
                "rounds is read unrounded; with each node computed in float32 and rounded at its output by explicit "
                f"Casts (as torch rounds each op) the file computes what torch computes (upstream: {UPSTREAM})",
                "runtime", "keep the explicit rounding (`drifttui repair` writes each of those nodes as Cast, the op "
                f"in float32, Cast back), or run the module in float32; report it with `drifttui repro` ({UPSTREAM})")
    if form == "per_call":
        return (f"torch computes each {low} op in float32 (its opmath) and rounds its result once; the file lowers "
                f"some of them to several {low} nodes ({which}), whose steps are rounded otherwise (each node as "
                "written, or none where ONNX Runtime drops its Casts); with every node computed in float32 and "
                "rounded where the exporter's record of the torch call it translates ends, the file computes what "
                f"torch computes within the {low} budget (the formulas inside a call are the lowering's own)",
                "export", "compute that op in float32 in the model ("
                + (f"`x.float().{op}(...).half()`" if op else "its input cast to float32, its result back to " + low)
                + "), or deploy the file with those nodes in float32 (`drifttui repair` applies it)")
    if form == "whole":
        return (f"torch computes a {low} op in float32 (its opmath) and rounds only its result (and the model's own "
                f"conversion to {low}); the file lowers it to several {low} nodes ({'/'.join(ops)}: {which}), whose "
                "steps are rounded otherwise (each node as written, or none where ONNX Runtime drops its Casts); "
                "with them computed in float32 and rounded only at the model's conversions and the op's result, the "
                "file computes what torch computes",
                "export", "compute that op in float32 in the model ("
                + (f"`x.float().{op}(...).half()`" if op else "its input cast to float32, its result back to " + low)
                + "), or deploy the file with those nodes in float32 (`drifttui repair` applies it)")
    return (f"torch computes a {low} op the file lowers to several nodes ({'/'.join(ops)}) in float32 (its opmath) "
            f"and rounds once; the file rounds each step to {low} ({which}); with those steps computed in float32 "
            "and rounded once where torch rounds, the file computes what torch computes",
            "export", "compute that op in float32 in the model ("
            + (f"`x.float().{op}(...).half()`" if op else "its input cast to float32, its result back to " + low)
            + "), or deploy the file "
            "with those nodes in float32 (`drifttui repair` applies it: Cast in, the op in float32, Cast back)")


def opmath_patches(case: Case, op: Optional[str] = None) -> list[Patch]:
    """Up to three patches (per_op, grouped, whole) for an origin with float16 / bfloat16 nodes; none otherwise.
    ``op``: the torch op the drift starts in (its name: ``var``), for the fix."""
    low, elems, known = _low_nodes(case)
    if not low:
        return []
    names = [n.name for n in low]
    if len(set(names)) != len(names) or not all(names):
        return []
    made = {o: elems[o] for n in low for o in n.output if o}
    stored = {t.name: int(t.data_type) for t in case.model.graph.initializer}
    types = {**stored, **elems}
    inputs = {v: types[v] for n in low for v in n.input if v and v not in made and types.get(v) in LOW}
    grouped = _grouped(low)
    forms = [("per_op", sorted(made))] + ([("grouped", sorted(set(made) - grouped))] if grouped else [])
    # per_call's story is a torch call lowered to several nodes: none where no call is (its float16-budget judgement
    # would otherwise let a rounding patch stand for another mechanism, a Python scalar written in float16)
    calls_lowered = _lowered_calls(low)
    per_call = sorted(_per_call(low)) if calls_lowered else []
    for form, rounded in (("whole", sorted(_converted(low))), ("per_call", per_call)):
        if rounded not in [r for _, r in forms] and (rounded or form == "whole"):
            forms.append((form, rounded))
    out = []
    for form, rounded in forms:
        shown = [n for n in low if n.op_type != "Constant"
                 and (form != "grouped" or any(o in grouped for o in n.output))]
        ops = sorted({n.op_type for n in shown})
        which = ", ".join(f"{n.op_type} {n.name}" for n in shown[:5]) + (" ..." if len(shown) > 5 else "")
        lowered = calls_lowered if form == "per_call" else []
        if lowered:         # the story and the fix name the longest lowering, the call the form is about
            which = ", ".join(dict.fromkeys(f"{t} as {'/'.join(dict.fromkeys(n.op_type for n in ns))}"
                                            for t, ns in lowered[:3]))
        why, kind, fix = _story(ops, form, which, "/".join(sorted({LOW_NAMES[t] for t in made.values()})),
                                lowered[0][0].split(".")[1] if lowered else op)
        spec = {"op": "rewrite", "rewrite": "opmath_float32", "form": form, "node": names[0], "nodes": names,
                "low": made, "inputs": inputs, "round": rounded}
        if form in ("per_call", "per_op"):      # inside a call both sides compute float32, by their own formulas
            spec["rtol"] = max(K_EPS * LOW_PRECISION_ELEM[t] for t in made.values())
        if form == "per_op":        # a call no record names (a TorchScript rsqrt as Div(1, Sqrt)): held to GAIN
            spec["gain"] = GAIN
        if form == "per_call" and lowered:      # conclude names that call's torch op (decisive_rounding's key)
            spec["decisive"] = lowered[0][1][-1].name
        out.append(Patch(spec, "dtype", why, fix, kind, module=case.module, nodes=names))
    return out
