"""What ``torch_align`` reads from the ONNX graph: the nodes a value is computed by, the nodes that only compute sizes,
the found ops that feed an op, the nodes of an op (``call_group``), and where an op's group holds the rest of an
input's lowering.

A torch call is found in the file at the ONNX value that holds its value; the lowering of that call can go on
after that value: ``atan2``'s quadrant fix-up reads inside the lowering of its input (``leaked``), and ``baddbmm``'s
``beta=0`` term (``0 * bias``) is added after the value that equals torch's, so the next call's group (a softmax)
reads the bias and that value (``continued``).  Either way the nodes belong to the input's call, which is named.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.torch_call import LAYOUT_NODES, PLUMBING
from drifttui.core.onnx.weights import read_tensor


def producers(case: Case) -> dict[str, Any]:
    return {o: n for n in case.model.graph.node for o in n.output if o}


def ancestors(producer: dict[str, Any], values: list[str]) -> set[str]:
    """The names of the nodes ``values`` are computed by (the nodes that make them included; an If's branches read
    outer values as inputs: TorchScript's ``diagonal`` picks its window in one)."""
    seen: set[str] = set()
    todo = [v for v in values if v in producer]
    while todo:
        n = producer[todo.pop()]
        if n.name not in seen:
            seen.add(n.name)
            todo.extend(v for v in (_reads(n) if n.attribute and n.op_type in _SUBGRAPHS else n.input) if v in producer)
    return seen


_SUBGRAPHS = ("If", "Loop", "Scan")


def computed_by(producer: dict[str, Any], order: dict[str, int], name: str, value: str) -> bool:
    """Whether node ``name`` is among the nodes ``value`` is computed by (``name in ancestors(producer, [value])``),
    walking up only through nodes after it in the graph's order (``order``: node name -> position; an ONNX graph
    is sorted, so nothing before ``name`` is computed from it): a check per call and input stays short on a long
    origin, where the whole walk made the alignment quadratic."""
    at = order.get(name)
    if at is None:
        return name in ancestors(producer, [value])
    seen: set[str] = set()
    todo = [value]
    while todo:
        n = producer.get(todo.pop())
        if n is None or n.name in seen:
            continue
        if n.name == name:
            return True
        seen.add(n.name)
        if order.get(n.name, at + 1) > at:
            todo.extend(n.input)
    return False


def leaked(case: Case, ops: list[tuple], found: dict[int, str], wrong: int,
            nodes: list[str], others: Optional[dict[int, list[str]]] = None) -> Optional[tuple[int, list[str]]]:
    """(input op, the nodes of ``wrong``'s that read inside its lowering) when ``wrong``'s nodes read a value
    computed before the found value of one of its inputs, other than that value (the file's lowering of the
    input goes on after the value that equals torch's: ``atan2``'s quadrant fix-up); None otherwise.  A call torch
    computes as the identity is found at its input's value (``x * 1.0`` at ``x``); a value that holds its value as
    closely (``others``: the file's own ``Mul`` for it) is that call's too, no leak."""
    if wrong in found:
        return None
    producer, sizes, group = producers(case), size_nodes(case), set(nodes)
    inputs = input_values(ops, found, wrong)
    # a value the file holds for a torch call is a reuse (fused Transposes), no leak
    same = {k for k in found if any(found.get(i) == found[k] for i in ops[k][3])}      # identities
    allowed = set(found.values()) | {v for k in same for v in (others or {}).get(k, [])}
    inside = {i: ancestors(producer, [found[i]]) for i in inputs}
    for n in case.model.graph.node:
        if n.name not in group:
            continue
        for v in n.input:
            p = producer.get(v)
            if p is None or p.name in group or p.name in sizes or v in allowed:
                continue
            hit = next((i for i in inputs if p.name in inside[i]), None)
            if hit is not None and ops[hit][0] == "call_function":
                reading = {x.name for x in case.model.graph.node
                           if any(producer.get(u) is not None and producer[u].name in inside[hit] and u not in allowed
                                  for u in x.input)}
                return hit, [m for m in nodes if m in _feeders(case, group, reading)]
    return None


def _feeders(case: Case, group: set[str], reading: set[str]) -> set[str]:
    """``reading`` (the group's nodes that read inside an input's lowering) and the group's nodes they are computed
    from: the input's lowering goes on there too (``atan2``'s quadrant test ``Greater(y, 0)``, which reads the found
    ``y`` itself, feeds the ``Where`` that reads the ``Atan``)."""
    producer = producers(case)
    out, todo = set(reading), [n for n in case.model.graph.node if n.name in reading]
    while todo:
        for v in todo.pop().input:
            p = producer.get(v)
            if p is not None and p.name in group and p.name not in out:
                out.add(p.name)
                todo.append(p)
    return out


def fed_ops(ops: list[tuple]) -> set[int]:
    """The ops computed from the module's inputs (the rest: from its state and constants alone)."""
    fed: set[int] = set()
    for k, (kind, _, _, ins, _) in enumerate(ops):
        if kind == "placeholder" or any(i in fed for i in ins):
            fed.add(k)
    return fed


def size_nodes(case: Case) -> set[str]:
    """Nodes that compute only from sizes and constants (Shape, Gather of it, a count cast to float): the op's
    arithmetic on sizes, not what it computes."""
    static = {t.name for t in case.model.graph.initializer}
    sizes: set[str] = set()
    made: set[str] = set(static)
    for n in case.model.graph.node:
        ins = [v for v in n.input if v]
        if n.op_type in ("Constant", "Shape", "Size") or (ins and all(v in made for v in ins)):
            sizes.add(n.name)
            made.update(o for o in n.output if o)
    return sizes


def input_values(ops: list[tuple], found: Any, k: int) -> list[int]:
    """The found ops that feed op ``k`` (through ops the file never materialises)."""
    out, todo, seen = [], list(ops[k][3]), set()
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        if i in found:
            out.append(i)
        else:
            todo.extend(ops[i][3])
    return out


def continued(case: Case, ops: list[tuple], found: dict[int, str], wrong: int, nodes: list[str],
              vals: dict[str, Any]) -> Optional[tuple[int, list[str]]]:
    """(input op, the nodes of ``wrong``'s group that are the rest of its lowering) when the group computes, from an
    argument of one of ``wrong``'s inputs (not of ``wrong``), a value that it merges with that input's found value,
    where it first reads it, into a value of the input's shape (``baddbmm(bias, q, k, beta=0)`` found at ``alpha * q @ k``, then ``+ 0 *
    bias`` in the softmax's group): the nodes from the argument to that merge; None otherwise (an argument read
    again for another use: an attention's ``k`` transposed from the view ``q`` came from)."""
    mine = input_values(ops, found, wrong)
    own = {found[i] for i in mine}
    group = [n for n in case.model.graph.node if n.name in set(nodes)]
    producer = producers(case)
    for i in mine:
        if ops[i][0] != "call_function" or i not in found or ops[i][2] is None:
            continue
        args = {found[j] for j in input_values(ops, found, i)} - own
        tainted: set[str] = set()
        for n in group:             # graph order: what the group computes from the argument
            if set(n.input) & args or any(producer[v].name in tainted for v in n.input if v in producer):
                tainted.add(n.name)
        first = next((n for n in group if found[i] in n.input), None)     # where the group takes the input's value
        if first is not None and first.name in tainted and \
                tuple(getattr(vals.get(first.output[0]), "shape", ())) == tuple(ops[i][2].shape):
            rest = ancestors(producer, [first.output[0]]) & tainted
            return i, [n.name for n in group if n.name in rest]
    return None


# the ATen ops and the ONNX nodes that only move values (a copy, a layout, a selection, a join): no arithmetic
MOVES = (*PLUMBING, "reshape", "flatten", "cat", "stack", "slice", "select", "index", "narrow", "split",
         "split_with_sizes", "unbind", "flip", "roll", "repeat", "contiguous", "movedim", "constant_pad_nd")
MOVE_NODES = (*LAYOUT_NODES, "Concat", "Slice", "Gather", "GatherElements", "Split", "Tile", "Pad", "ReverseSequence",
              "Constant")


def moved_tail(case: Case, ops: list[tuple], found: dict[int, str], wrong: int, nodes: list[str],
               aten: Optional[str]) -> Optional[tuple[int, list[str]]]:
    """(the call, the nodes of ``wrong``'s group that are the rest of its lowering) when ``wrong`` only moves values
    (``aten`` in ``MOVES``: a ``cat``, a ``reshape``) and its group computes arithmetic from an input's found value:
    that input's lowering goes on after a value that equals torch's (``cdist(p=0)``'s ``ReduceSum`` counts what torch
    counts, then ``Pow(count, 1/0)`` makes it inf, in the ``cat`` after it).  The call is the first that holds the
    value (the copies and views after it keep it); the nodes, the arithmetic computed from it.  None otherwise."""
    if aten is None or len(aten.split(".")) < 2 or aten.split(".")[1] not in MOVES:
        return None
    group = [n for n in case.model.graph.node if n.name in set(nodes)]
    sizes = size_nodes(case)
    for i in input_values(ops, found, wrong):
        tainted: set[str] = set()
        for n in group:             # graph order: what the group computes from the input's value
            if found[i] in n.input or set(n.input) & tainted:
                tainted.update(o for o in n.output if o)
                tainted.add(n.name)
        sums = [n.name for n in group if n.name in tainted and n.op_type not in MOVE_NODES and n.name not in sizes]
        if sums and ops[i][0] == "call_function":
            return min(k for k in found if found[k] == found[i] and ops[k][0] == "call_function"), sums
    return None


def call_group(case: Case, ops: list[tuple], found: dict[int, str], wrong: int,
               vals: dict[str, np.ndarray]) -> list[str]:
    """The ONNX nodes of op ``wrong``: ancestors of the value closest to its own (of its shape, computed after
    its inputs' values), minus the nodes its inputs' values are computed by."""
    producer = producers(case)

    def up(values: list[str]) -> set[str]:
        return ancestors(producer, values)

    before = up([found[i] for i in input_values(ops, found, wrong)])
    best = closest(case, ops, found, wrong, vals, before)
    if best is None:        # no value of its shape: up to the outputs that differ from torch
        best_values = [o.name for o in case.model.graph.output]
    else:
        best_values = [best]
    mine = up(best_values) - before
    # an op of the module's state alone (one the file computes from its constants: ``_right``) is lowered by nodes
    # that read constants only: they are its nodes, not arithmetic on sizes
    sizes = size_nodes(case) if wrong in _fed_ops_cached(ops) else set()
    return [n.name for n in case.model.graph.node if n.name in mine and n.name not in sizes]


def fused_into(case: Case, ops: list[tuple], found: dict[int, str], wrong: int, vals: dict[str, np.ndarray],
               feeding: set[int]) -> int:
    """The call whose value an exporter's fused node computes, when ``wrong`` is one of the calls it fused: the file
    holds no value of ``wrong``'s shape after its inputs' (``closest`` finds none), and a later call computed from
    it through calls the file never holds has one, made by a node that reads ``wrong``'s inputs' values themselves
    (the TorchScript exporter's ``SoftmaxCrossEntropyLoss`` for a ``div``, ``log_softmax``, ``transpose`` and
    ``nll_loss``, reading the scores from before the ``div``): that later call, whose value the fused node stands
    for and whose lowering it is; ``wrong`` otherwise (a lowering that makes a value of another shape is wrong
    itself)."""
    producer = producers(case)
    ins = input_values(ops, found, wrong)
    before = ancestors(producer, [found[i] for i in ins])
    if not ins or closest(case, ops, found, wrong, vals, before) is not None:
        return wrong
    read, chain = {found[i] for i in ins}, {wrong}
    for k in range(wrong + 1, len(ops)):
        if ops[k][0] != "call_function" or k in found or not set(ops[k][3]) & chain or ops[k][2] is None:
            continue
        chain.add(k)
        best = closest(case, ops, found, k, vals, before) if k in feeding else None
        if best is not None:
            return k if set(producer[best].input) & read else wrong
    return wrong


HOLDS_NOTHING = 0.5         # closest: a value this far off torch's (a share of its largest element) is none of it


def closest(case: Case, ops: list[tuple], found: dict[int, str], wrong: int, vals: dict[str, np.ndarray],
            before: set[str]) -> Optional[str]:
    """The ONNX value closest to op ``wrong``'s (of its shape, not computed by its inputs' nodes, not another
    op's found value, a boolean only for a boolean: a mask is no float's value; for a call computed from the module's
    inputs, a value computed from the case's feeds: a ``diagonal``'s NaN is farther from torch's than a lowering's
    constant index vector of its shape, which is no value of the call's).  A value off torch's by half its largest
    element or more (``HOLDS_NOTHING``; zeros are off by all of it) holds nothing of it: where no value is closer, one
    of the call's own type comes
    first (an exporter types its lowering's result as torch types the call: TorchScript's ``3 << n`` of an int64
    ``n`` is ``3 * Cast(Pow(2, Cast(n, float)), int64)``, whose ``Cast(n, float)`` is nearer a result of zeros and
    a few 3 * 2**54 than the wrapped product is, while only the product is the lowering's end); among those of a
    type, the one off torch's on the fewest elements (``share_off``: an ``atan2`` lowering's end, 2 pi off on the few
    elements of its boundary, is nearer torch's than its ``Atan``, pi off on half of them)."""
    producer = producers(case)
    want = ops[wrong][2]
    taken = set(found.values())
    fed = fed_values(case) if getattr(case, "feeds", None) and wrong in _fed_ops_cached(ops) else None
    best, rank = found.get(wrong), (1, 1, 2.0, float("inf")) if wrong not in found else (0, 0, 0.0, 0.0)
    for v, a in vals.items():
        if fed is not None and v not in fed:
            continue        # a call computed from the module's inputs is held by no constant of the file
        if v in producer and v not in taken and want is not None and np.shape(a) == want.shape and \
                np.asarray(a).dtype.kind in "fiub" and producer[v].name not in before and \
                (np.asarray(a).dtype.kind == "b") == (want.dtype.kind == "b"):
            d = _distance_to(want, np.asarray(a))
            r = (0, 0, 0.0, d) if d < HOLDS_NOTHING else \
                (1, int(np.asarray(a).dtype != want.dtype), share_off(want, np.asarray(a)), d)
            if r < rank:
                best, rank = v, r
    return best


_CACHE: list[tuple[Any, Any]] = []      # (key object, its result): the last few, by identity


def _cached(key: Any, make: Any) -> Any:
    for k, r in _CACHE:
        if k is key:
            return r
    r = make()
    _CACHE.insert(0, (key, r))
    del _CACHE[8:]
    return r


def _fed_ops_cached(ops: list[tuple]) -> set[int]:
    return _cached(ops, lambda: fed_ops(ops))


def fed_values(case: Case) -> set[str]:
    """The values of the case computed from its feeds' values (the rest: its constants, and what they and the feeds'
    shapes alone make: a lowering's index vectors)."""
    def make() -> set[str]:
        fed = set(case.feeds)
        for n in case.model.graph.node:
            if n.op_type not in ("Shape", "Size") and any(i in fed for i in _reads(n)):
                fed.update(o for o in n.output if o)
        return fed
    return _cached(case.model, make)


def state_computed(case: Case, vals: dict[str, Any]) -> list[np.ndarray]:
    """The values the case's nodes compute from its constants alone (not from its feeds, not a ``Constant``): a
    computation on the module's state the exporter left in the file rather than folding it."""
    fed = fed_values(case)
    return [np.asarray(vals[o]) for n in case.model.graph.node if n.op_type != "Constant"
            for o in n.output if o and o not in fed and o in vals]


def _reads(node: Any) -> list[str]:
    """The values a node reads: its inputs, and the outer values its subgraphs read (an If's branches)."""
    out = list(node.input)
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            out.extend(i for n in g.node for i in _reads(n))
    return out


def share_off(want: np.ndarray, got: np.ndarray) -> float:
    """The share of ``got``'s elements off torch's ``want`` past float32 noise (1e-4 of its largest finite element),
    an inf or NaN on one side only counted off."""
    w, g = want.astype(np.float64).reshape(-1), got.astype(np.float64).reshape(-1)
    if not w.size:
        return 0.0
    fin = np.isfinite(w) & np.isfinite(g)
    scale = float(np.abs(w[fin]).max()) if fin.any() else 0.0
    same = np.where(fin, np.abs(w - np.where(fin, g, 0.0)) <= 1e-4 * (scale or 1.0), (w == g) | (np.isnan(w) & np.isnan(g)))
    return float((~same).mean())


def _distance_to(want: np.ndarray, got: np.ndarray) -> float:
    w, g = want.astype(np.float64).reshape(-1), got.astype(np.float64).reshape(-1)
    fin = np.isfinite(w) & np.isfinite(g)
    miss = float((~fin & ~((w == g) | (np.isnan(w) & np.isnan(g)))).mean()) if w.size else 0.0
    scale = float(np.abs(w[fin]).max()) if fin.any() else 1.0
    return miss + (float(np.abs(w[fin] - g[fin]).max()) / (scale or 1.0) if fin.any() else 0.0)


def constant_values(case: Case) -> dict[str, np.ndarray]:
    """The case's initializers: a call on an argument the exporter folded into a constant (``bank.unsqueeze(0)``
    of a buffer the parent hands in) is held by one, so it is found (right) and never named for its readers."""
    out: dict[str, np.ndarray] = {}
    for init in case.model.graph.initializer:
        try:
            out[init.name] = read_tensor(init)
        except Exception:  # noqa: BLE001 - an element type numpy cannot hold: not a value to match
            continue
    return out
