"""Pair a module call's torch outputs with the ONNX values produced inside its scope.

By shape and dtype first.  When a call has several outputs of one shape, by content: sample 0
through ONNX Runtime, each torch output taking the closest candidate.  An output that is one
of the call's own inputs, unchanged, is not paired: nothing of the module's to compare.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import numpy as np

from drifttui.core.base.dtypes import ELEM_OF

from drifttui.core.runtime.torch_hooks import Call
from drifttui.core.onnx.graph import GraphIndex
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import UNMAPPED


FLOAT_ELEMS = {ELEM_OF[n] for n in ("float32", "float16", "float64", "bfloat16")}
BOOL_ELEM = ELEM_OF["bool"]
Resolver = Callable[[list[str]], dict[str, Any]]
TorchInputs = Callable[[list[tuple[int, int]]], dict[tuple[int, int], Any]]     # (call, position) -> sample 0


def shape_ok(onnx_shape: Optional[list], torch_shape: tuple[int, ...]) -> bool:
    if onnx_shape is None:
        return True
    if len(onnx_shape) != len(torch_shape):
        return False
    return all(not isinstance(a, int) or a == b for a, b in zip(onnx_shape, torch_shape))


def dtype_ok(elem: Optional[int], torch_dtype: str) -> bool:
    if elem is None or elem == 0:
        return True
    is_float = torch_dtype.startswith(("float", "bfloat", "half", "double"))
    # a bool value is a mask, never an integer tensor of the same shape: DeBERTa's layers take an int64 mask
    # and the dynamo file reads ``Not(Cast(mask, bool))`` there; paired, the local run fed the int64 mask as that
    # bool value (ONNX Runtime refused the local graph: exit 3 on a clean file)
    return (elem in FLOAT_ELEMS) == is_float and (elem == BOOL_ELEM) == (torch_dtype == "bool")




def promoted_later(index: GraphIndex, value: str, torch_dtype: str) -> bool:
    """An integer value where torch's module returns a float, every consumer a Cast to float: the
    exporter kept the module's result in the integer type and moved torch's promotion (``clamp`` of an
    integer tensor with a float bound returns a float) into the consumer.  It is the module's output,
    compared as a float (issue 30 point 6: otherwise the module has no ONNX value and its consumer,
    fed the wrong values, is named)."""
    elem = index.elem_types.get(value)
    if not elem or elem in FLOAT_ELEMS or not torch_dtype.startswith(("float", "bfloat", "half", "double")):
        return False
    users = [index.nodes[c] for c in index.consumers.get(value, [])]
    return bool(users) and all(n.op_type == "Cast" and n.proto.attribute and
                               n.proto.attribute[0].i in FLOAT_ELEMS for n in users)


def returned_otherwise(index: GraphIndex, value: str) -> bool:
    """A value of the module's shape but not its dtype that the file returns and nothing reads: the exporter
    lost torch's type promotion (``bool_mask * 3.0`` lowered to ``And``: the file returns a bool where torch's
    module returns a float).  It is the module's output, compared (issue 30 point 6); no local graph is fed it."""
    return value in index.graph_outputs and not index.consumers.get(value)


def boundary_outputs(index: GraphIndex, nodes: set[int]) -> list[str]:
    outs: list[str] = []
    for ni in sorted(nodes):
        for v in index.nodes[ni].outputs:
            if not v:
                continue
            if v in index.graph_outputs or any(c not in nodes for c in index.consumers.get(v, [])):
                outs.append(v)
    return outs


def _fits(index: GraphIndex, call: Call, cands: list[str]) -> int:
    """How many of the call's computed outputs find a shape/dtype-compatible candidate."""
    used: set[str] = set()
    n = 0
    for ref in call.outputs:
        if ref.passthrough:
            continue
        v = next((v for v in cands if v not in used and shape_ok(index.shapes.get(v), ref.shape)
                  and dtype_ok(index.elem_types.get(v), ref.dtype)), None)
        if v is not None:
            used.add(v)
            n += 1
    return n


def scopeless_adoptions(index: GraphIndex, calls: list[Call], plan: Plan) -> Iterator[tuple[int, list[int]]]:
    """(call, nodes): give a call the scope-less nodes (optimiser-made, e.g. a recreated ``Split``) fed
    only by it.  Yielded one call at a time: build_plan applies each before the next is computed.

    Such a node's scope is filled with the common scope of its neighbours, which puts a Split at
    the end of a tuple-returning module *outside* it.  It is adopted only when that lets more of
    the call's outputs find a value of their shape/dtype: structure and shapes, never names.
    """
    for cm in plan.calls:
        call = calls[cm.call]
        if call.parent is None or not cm.nodes or cm.status == UNMAPPED:
            continue
        computed = [r for r in call.outputs if not r.passthrough]
        inside = set(cm.nodes)
        cands = [v for v in boundary_outputs(index, inside) if v not in index.constant_values]
        before = _fits(index, call, cands)
        if before == len(computed):
            continue
        adopt = []
        for node in index.nodes:
            if not node.scope_filled or node.index in inside or node.op_type == "Constant":
                continue
            dyn = [v for v in node.inputs if v and not index.is_static(v)]
            if dyn and all(index.producer.get(v) in inside for v in dyn):
                adopt.append(node.index)
        if not adopt:
            continue
        grown = inside | set(adopt)
        cands = [v for v in boundary_outputs(index, grown) if v not in index.constant_values]
        if _fits(index, call, cands) > before:
            yield cm.call, adopt


@dataclass
class Pairing:
    """What pair_outputs found; mapping.build_plan applies it to its plan (pairing only reads the plan)."""

    outputs: dict[int, dict[int, str]] = field(default_factory=dict)   # call -> output position -> value
    unmapped: dict[int, str] = field(default_factory=dict)            # call -> why it is unmapped
    ambiguous: dict[int, list[str]] = field(default_factory=dict)     # calls shape alone cannot decide


def pair_outputs(index: GraphIndex, calls: list[Call], plan: Plan) -> Pairing:
    """Pair by shape/dtype; ``ambiguous``: multi-output calls whose pairing shape alone cannot decide."""
    result = Pairing()
    ambiguous = result.ambiguous
    for cm in plan.calls:
        call = calls[cm.call]
        if cm.status == UNMAPPED:
            continue
        paired = result.outputs.setdefault(cm.call, {})
        if call.parent is None:
            # the root: model outputs are the graph outputs, in order
            for pos, ref in enumerate(call.outputs):
                if pos < len(index.graph_outputs):
                    paired[pos] = index.graph_outputs[pos]
            continue
        if not cm.nodes:
            continue
        cands = [v for v in boundary_outputs(index, set(cm.nodes)) if v not in index.constant_values]
        used: set[str] = set()
        computed = [ref for ref in call.outputs if not ref.passthrough]
        for pos, ref in enumerate(call.outputs):
            if ref.passthrough:
                continue    # the module returns one of its inputs: nothing of its own to compare
            ok = [v for v in cands if v not in used and shape_ok(index.shapes.get(v), ref.shape)
                  and dtype_ok(index.elem_types.get(v), ref.dtype)]
            ok = ok or [v for v in cands if v not in used and shape_ok(index.shapes.get(v), ref.shape)
                        and (promoted_later(index, v, ref.dtype) or returned_otherwise(index, v))]
            if not ok:
                continue
            if len(computed) > 1 and len([v for v in cands if shape_ok(index.shapes.get(v), ref.shape)]) > 1:
                ambiguous[cm.call] = cands
            # several fit: with one output the module's result is computed last;
            # with several, pair them in production order
            v = ok[-1] if len(call.outputs) == 1 else ok[0]
            paired[pos] = v
            used.add(v)
        if call.outputs and not paired and all(r.passthrough for r in call.outputs):
            paired.update(_handed_back(index, call, cands))
        if call.outputs and not paired and not all(r.passthrough for r in call.outputs):
            result.unmapped[cm.call] = ("it has ONNX nodes, but none of their outputs matches the module's "
                                        "output shape/dtype")
    return result


def _handed_back(index: GraphIndex, call: Call, cands: list[str]) -> dict[int, str]:
    """A call that handed its one input back unchanged on sample 0 (``return x`` on one path of a Python ``if``)
    whose own nodes still compute a value of that shape for the reader: the file computes the module's other path
    (a trace keeps the branch of its example), so that value is the module's output, compared with torch's.
    Only a single-output call whose nodes hand on exactly one value that fits: nothing else can be meant."""
    if len(call.outputs) != 1:
        return {}
    ref = call.outputs[0]
    fits = [v for v in cands if shape_ok(index.shapes.get(v), ref.shape) and dtype_ok(index.elem_types.get(v), ref.dtype)
            and v not in index.graph_inputs]
    return {0: fits[0]} if len(fits) == 1 else {}


def pair_by_content(index: GraphIndex, calls: list[Call], plan: Plan, ambiguous: dict[int, list[str]],
                     resolve: Resolver, torch_outputs: dict[int, list[Any]]) -> dict[int, dict[int, str]]:
    """Same-shaped outputs: pair each torch output with the candidate whose sample-0 value is closest.
    Returns the new pairing of the calls it could decide (call -> position -> value)."""
    names = sorted({v for cands in ambiguous.values() for v in cands})
    found: dict[int, dict[int, str]] = {}
    try:
        values = resolve(names)
    except Exception:
        return found      # keep the shape pairing; nothing better is known
    for ci, cands in ambiguous.items():
        outs = torch_outputs.get(ci)
        if not outs:
            continue
        paired = found[ci] = {}
        used: set[str] = set()
        for pos, ref in enumerate(calls[ci].outputs):
            if ref.passthrough or pos >= len(outs):
                continue
            t = np.asarray(outs[pos], dtype=np.float32)
            scored = []
            for v in cands:
                o = values.get(v)
                if v in used or o is None or o.size != t.size:
                    continue
                err = float(np.max(np.abs(t.reshape(-1) - o.astype(np.float32).reshape(-1)))) if t.size else 0.0
                scored.append((err, v))
            if scored:
                err, v = min(scored)
                paired[pos] = v
                used.add(v)
    return found


def pair_inputs_by_content(ambiguous: dict[int, list[tuple[list[int], list[str]]]], table: dict[str, tuple],
                           resolve: Resolver, torch_inputs: TorchInputs) -> dict[str, tuple[int, int]]:
    """Free values that fit several same-shaped torch inputs of a call: each paired with the input whose sample-0
    value it equals (the closest; among equally close ones, the first when they hold the same tensor, else none);
    value -> (call, position).  None when no content is known: an input left unpaired is fed from the nodes before
    it, never from another tensor."""
    groups = [(ci, twins, fits) for ci, gs in ambiguous.items() for twins, fits in gs]
    values = sorted({v for _, _, fits in groups for v in fits if v not in table})
    try:
        onnx_vals = resolve(values)
        torch_vals = torch_inputs(sorted({(ci, p) for ci, twins, _ in groups for p in twins}))
    except Exception:  # noqa: BLE001 - no content: left unpaired
        return {}
    found: dict[str, tuple[int, int]] = {}
    for ci, twins, fits in groups:
        for v in fits:
            o = onnx_vals.get(v)
            if v in table or o is None:
                continue
            shape, exact = np.shape(o), not np.issubdtype(np.asarray(o).dtype, np.floating)
            o = np.asarray(o, dtype=np.float64).reshape(-1)
            # a value of another shape on sample 0 is never that input (a size unknown in the file fitted it); an
            # integer value (indices, lengths) is the input it equals or none: the closest of two others is not it
            # (a packed LSTM's int32 lengths paired with torch's sorted indices, fed to ORT as its sequence_lens).
            # The one value that fits the one input of its kind is that input whatever it holds: its size was
            # unknown, the sample-0 shape decides; indices that drifted before the call (a tie order of TopK in the
            # parent's forward) are still its input, and fed from torch its own error is its own
            sole = len(twins) == 1 and len(fits) == 1
            scored = [(_max_abs(o, t), p) for p in twins if (t := torch_vals.get((ci, p))) is not None
                      and np.shape(t) == shape and (ci, p) not in found.values()]
            scored = sorted(s for s in scored if not exact or s[0] == 0.0 or sole)
            tied = [p for err, p in scored if err == scored[0][0]] if scored else []
            # one tensor passed twice (``attn(x, x, x)``): any of them is the value; two that differ: none
            if tied and all(np.array_equal(torch_vals[(ci, p)], torch_vals[(ci, tied[0])]) for p in tied):
                found[v] = (ci, tied[0])
    return found


def _max_abs(a: Any, b: Any) -> float:
    return float(np.max(np.abs(a - np.asarray(b, dtype=np.float64).reshape(-1)))) if a.size else 0.0
