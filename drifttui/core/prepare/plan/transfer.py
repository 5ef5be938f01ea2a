"""Map a deployed ONNX file that lost the exporter's scopes through a reference export.

The deployed file (onnxsim, onnxslim, ORT offline optimisation, onnxruntime.transformers'
optimizer) computes what the reference export (the file before the pipeline, or drifttui's own
export with the file's exporter) computes, in other nodes under other names.  The reference's
module <-> value plan is carried over by structure and content, never by name:

- anchors: the graph inputs, and the reference's float initializers matched to the deployed ones
  by content (equal, transposed, reshaped, scaled per output channel as a folded BatchNorm does,
  or, failing those, the closest of the same size: a drifted or reduced-precision copy), and
  deployed tensors that concatenate several reference ones (an Attention's packed QKV weight);
- each value's anchor set (the anchors it is computed from) and its shape on sample 0: a deployed
  value can stand for a reference value only when both agree; a value that lost an anchor (a
  Linear's MatMul whose bias went into a BiasGelu) can never stand for the module's output;
- numerics on sample 0 pick among the candidates that remain: the reference value each deployed
  value equals, else the closest (a drift injected after the pipeline changes the numbers, not
  the structure).  A reference value whose closest deployed value is taken by a value it equals
  is fused (a simplifier folded it), never paired wrongly.

Each call then owns the deployed nodes between its inputs and its outputs (its region); a call
whose output value the deployed file no longer has is ``fused`` into the call whose node
computes it now, and the note names that node.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from drifttui.core.prepare.plan.anchors import anchor_masks, match_anchors, match_concatenated
from drifttui.core.prepare.plan.plan import CallMap, Plan
from drifttui.core.result import FUSED, OK

EQUAL_RTOL = 1e-4          # a deployed value equals a reference value: max|d - r| <= EQUAL_RTOL * max|r|
NCHWC = "com.microsoft.nchwc"


@dataclass
class Match:
    value: str                 # deployed value
    err: float                 # max|d - r| / max|r| on sample 0
    exact: bool


@dataclass
class Transferred:
    matches: dict[str, Match] = field(default_factory=dict)    # reference value -> deployed match
    anchors: dict[str, str] = field(default_factory=dict)      # deployed initializer -> reference one
    how: dict[str, int] = field(default_factory=dict)          # anchor match kind -> count


def _squeezed(shape: tuple) -> tuple:
    """A shape without its 1-dims: [10, 32] (a Gemm's flattened batch) carries [1, 10, 32]."""
    return tuple(int(d) for d in shape if d != 1)


def comparable(index: Any, value: str) -> bool:
    """False for values in ORT's blocked NCHWc layout (between ReorderInput and ReorderOutput)."""
    p = index.producer.get(value)
    if p is None:
        return True
    n = index.nodes[p]
    return not (n.domain == NCHWC and n.op_type != "ReorderOutput")


def _probe(a: np.ndarray) -> np.ndarray:
    flat = a.reshape(-1)
    step = max(1, flat.size // 64)
    return flat[::step][:64].astype(np.float64)


def _best(a: np.ndarray, mask: int, cands: list[str], dep_vals: dict[str, np.ndarray], d_mask: dict[str, int],
          probes: dict[str, np.ndarray]) -> Optional[Match]:
    """The closest candidate with the same anchors, or one with a subset of them that is equal
    (an optimiser dropped an Add of zeros, a Mul by ones): losing an anchor otherwise means the
    value is not the module's output (a Linear's MatMul whose bias a BiasGelu took)."""
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    bound = EQUAL_RTOL * max(scale, 1e-12)
    pa = _probe(a)
    best: Optional[Match] = None
    for d in cands:
        dm = d_mask.get(d, 0)
        same = dm == mask
        if not same and (dm & ~mask or not dm):
            continue
        b = dep_vals[d]
        if b.dtype.kind != a.dtype.kind and not (b.dtype.kind == "f" and a.dtype.kind == "f"):
            continue
        if not same and (probes[d].size != pa.size or np.max(np.abs(probes[d] - pa), initial=0.0) > bound):
            continue
        err = float(np.max(np.abs(a.astype(np.float64).reshape(-1) - b.astype(np.float64).reshape(-1)),
                           initial=0.0)) / max(scale, 1e-12)
        if not same and err > EQUAL_RTOL:
            continue
        if best is None or err < best.err:
            best = Match(d, err, err <= EQUAL_RTOL)
    return best


def transfer_values(ref: Any, dep: Any, wanted: list[str], ref_vals: dict[str, np.ndarray],
                    dep_vals: dict[str, np.ndarray]) -> Transferred:
    """Match each ``wanted`` reference value to the deployed value that carries it."""
    anchors, how = match_anchors(ref, dep)
    packed, n_blocks = match_concatenated(ref, dep, anchors)
    if n_blocks:
        how = {**how, "blocks of a concatenation": n_blocks}
    bit_of: dict[str, int] = {}
    for r in [*anchors.values(), *(r for parts in packed.values() for r in parts)]:
        bit_of.setdefault(r, len(bit_of))
    r_bits = {r: 1 << b for r, b in bit_of.items()}
    d_bits = {d: r_bits[r] for d, r in anchors.items()}
    for d, parts in packed.items():
        d_bits[d] = sum(r_bits[r] for r in set(parts))
    for k, (ri, di) in enumerate(zip(ref.graph_inputs, dep.graph_inputs)):
        b = 1 << (len(bit_of) + k)
        r_bits[ri], d_bits[di] = b, b
    r_mask, d_mask = anchor_masks(ref, r_bits), anchor_masks(dep, d_bits)
    groups: dict[tuple, list[str]] = {}
    for v, a in dep_vals.items():
        if comparable(dep, v) and v not in dep.initializers and not dep.is_static(v):
            groups.setdefault(_squeezed(a.shape), []).append(v)
    probes = {v: _probe(a) for v, a in dep_vals.items()}
    choice: dict[str, Match] = {}
    for r in wanted:
        a = ref_vals.get(r)
        if a is None:
            continue
        best = _best(a, r_mask.get(r, 0), groups.get(_squeezed(a.shape), []), dep_vals, d_mask, probes)
        if best is not None:
            choice[r] = best
    out = Transferred(anchors=anchors, how=how)
    out.matches = _resolve(choice)
    _second_choices(ref, dep, ref_vals, dep_vals, r_mask, d_mask, groups, probes, choice, out.matches)
    return out


def _resolve(choice: dict[str, Match]) -> dict[str, Match]:
    """A deployed value equal to some reference value is theirs; otherwise the closest one keeps it."""
    exact_users = {m.value for m in choice.values() if m.exact}
    closest: dict[str, tuple[float, str]] = {}
    for r, m in choice.items():
        if not m.exact and (m.value not in closest or m.err < closest[m.value][0]):
            closest[m.value] = (m.err, r)
    return {r: m for r, m in choice.items()
            if m.exact or (m.value not in exact_users and closest[m.value][1] == r)}


def _second_choices(ref: Any, dep: Any, ref_vals: dict, dep_vals: dict, r_mask: dict, d_mask: dict,
                    groups: dict, probes: dict, choice: dict[str, Match], matches: dict[str, Match]) -> None:
    """A reference value that lost its closest deployed value to a value *downstream* of it, where
    neither equals it (a drift inside the module changes both: a wrong weight in a Conv makes the
    Relu after it look as close as the Conv's own output), takes the closest free value with the
    same anchors that lies upstream of the winner's, in both graphs' order: the drift is in the
    numbers, the structure still holds.  A value folded away has no such candidate and stays fused."""
    taken = {m.value for m in matches.values()}
    winner = {m.value: r for r, m in matches.items()}
    for r, m in choice.items():
        if r in matches or m.exact:
            continue
        r2 = winner.get(m.value)
        if r2 is None or matches[r2].exact or not _upstream(ref, r, r2):
            continue
        free = [d for d in groups.get(_squeezed(ref_vals[r].shape), [])
                if d not in taken and d_mask.get(d, 0) == r_mask.get(r, 0) and _upstream(dep, d, m.value)]
        alt = _best(ref_vals[r], r_mask.get(r, 0), free, dep_vals, d_mask, probes)
        if alt is not None:
            matches[r] = alt
            taken.add(alt.value)


def _upstream(index: Any, a: str, b: str) -> bool:
    """True when value ``a`` is one that value ``b`` is computed from."""
    seen: set[str] = set()
    stack = [b]
    while stack:
        v = stack.pop()
        p = index.producer.get(v)
        if p is None:
            continue
        for u in index.nodes[p].inputs:
            if u == a:
                return True
            if u and u not in seen:
                seen.add(u)
                stack.append(u)
    return False


# --- the plan on the deployed graph ------------------------------------------------------

def _subtrees(calls: list) -> dict[int, set[int]]:
    below: dict[int, set[int]] = {c.index: set() for c in calls}
    for c in calls:
        p = c.parent
        while p is not None:
            below[p].add(c.index)
            p = calls[p].parent
    return below


def _region(dep: Any, outs: list[str], ci: int, table: dict, below: set[int]) -> set[int]:
    """The deployed nodes between call ``ci``'s inputs and its outputs."""
    seen: set[int] = set()
    stack = list(outs)
    visited: set[str] = set()
    while stack:
        v = stack.pop()
        if v in visited:
            continue
        visited.add(v)
        p = dep.producer.get(v)
        if p is None or p in seen:
            continue
        seen.add(p)
        for u in dep.nodes[p].inputs:
            if not u or dep.is_static(u) or u in dep.graph_inputs:
                continue
            e = table.get(u)
            if e is not None and not (e[1] in below or (e[0] == "out" and e[1] == ci)):
                continue     # a value of a call outside this one: its input
            stack.append(u)
    return seen


def build_transferred_plan(dep: Any, calls: list, ref_plan: Plan, tr: Transferred, ref: Any) -> Plan:
    """The reference's plan carried onto the deployed graph through ``tr``'s matches."""
    to_dep = {r: m.value for r, m in tr.matches.items()}
    to_dep.update(zip(ref.graph_inputs, dep.graph_inputs))
    maps = []
    lost: dict[int, list[str]] = {}
    for rcm in ref_plan.calls:
        cm = CallMap(rcm.call, status=rcm.status, note=rcm.note, folded_into=rcm.folded_into)
        if calls[rcm.call].parent is None:
            cm.outputs = {pos: v for pos, v in enumerate(dep.graph_outputs[:len(calls[rcm.call].outputs)])}
        else:
            cm.outputs = {pos: to_dep[r] for pos, r in rcm.outputs.items() if r in to_dep}
            missing = [r for pos, r in rcm.outputs.items() if r not in to_dep]
            if rcm.status == OK and missing and not cm.outputs:
                lost[rcm.call] = missing
        cm.inputs = {pos: to_dep[r] for pos, r in rcm.inputs.items() if r in to_dep}
        maps.append(cm)
    table: dict[str, tuple[str, int, int]] = {}
    for cm in sorted(maps, key=lambda c: calls[c.call].depth):
        for pos, v in cm.outputs.items():
            table[v] = ("out", cm.call, pos)
    for cm in maps:
        for pos, v in cm.inputs.items():
            table.setdefault(v, ("in", cm.call, pos))
    for pos, name in enumerate(dep.graph_inputs):
        table.setdefault(name, ("graph_in", -1, pos))
    below = _subtrees(calls)
    node_call: list[Optional[int]] = [0 if calls and calls[0].parent is None else None] * len(dep.nodes)
    depth_of = [0] * len(dep.nodes)
    for cm in maps:
        call = calls[cm.call]
        if call.parent is None:
            cm.nodes = list(range(len(dep.nodes)))
            continue
        if not cm.outputs:
            continue
        region = _region(dep, list(cm.outputs.values()), cm.call, table, below[cm.call])
        cm.nodes = sorted(region)
        for ni in region:
            if node_call[ni] is None or call.depth + 1 > depth_of[ni]:
                node_call[ni], depth_of[ni] = cm.call, call.depth + 1
    for ni, ci in enumerate(node_call):
        if ci is not None:
            maps[ci].own.append(ni)
    _state_fused(dep, calls, ref, maps, lost, to_dep, node_call)
    return Plan(maps, node_call, table, True)


def _state_fused(dep: Any, calls: list, ref: Any, maps: list, lost: dict[int, list[str]],
                 to_dep: dict[str, str], node_call: list) -> None:
    """Calls whose output value the deployed file no longer has: fused into the node computing it now."""
    swallowed: dict[int, list[int]] = {}
    for ci, values in lost.items():
        node = _downstream_node(ref, dep, values, to_dep)
        cm = maps[ci]
        cm.status = FUSED
        if node is None:
            cm.note = ("the deployed file has no value for its output (fused or folded by the tool that "
                       "processed the file); nothing of its own to compare")
            continue
        n = dep.nodes[node]
        into = node_call[node]
        cm.folded_into = into if into != ci else None
        swallowed.setdefault(node, []).append(ci)
        where = f"{n.op_type} node {n.name}" + (f" ({n.domain})" if n.domain else "")
        cm.note = (f"fused: the deployed file computes it inside {where}, which outputs "
                   f"{calls[into].module or '(root)' if into is not None else 'a later value'}'s value; "
                   "its own output is not in the file (compared as part of that call)")
    for node, cis in swallowed.items():
        into = node_call[node]
        if into is None:
            continue
        n = dep.nodes[node]
        names = ", ".join(calls[c].module or "(root)" for c in sorted(cis))
        extra = f"its {n.op_type} node {n.name} also computes {names} (fused)"
        maps[into].note = f"{maps[into].note}; {extra}" if maps[into].note else extra


def _downstream_node(ref: Any, dep: Any, values: list[str], to_dep: dict[str, str]) -> Optional[int]:
    """The deployed node that computes the first matched reference value downstream of ``values``."""
    seen: set[str] = set()
    frontier = list(values)
    for _ in range(64):
        nxt: list[str] = []
        for v in frontier:
            for c in ref.consumers.get(v, []):
                for o in ref.nodes[c].outputs:
                    if not o or o in seen:
                        continue
                    seen.add(o)
                    if o in to_dep and dep.producer.get(to_dep[o]) is not None:
                        return dep.producer[to_dep[o]]
                    nxt.append(o)
        if not nxt:
            return None
        frontier = nxt
    return None
