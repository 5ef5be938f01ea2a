"""Map a deployed ONNX file that lost the exporter's scopes through a reference export: the plan.

matching.py pairs each reference value with the deployed value that carries it, by structure and
content, never by name.  Each call then owns the deployed nodes between its inputs and its outputs
(its region); a call whose output value the deployed file no longer has is ``fused`` into the call
whose node computes it now, and the note names that node.  The blocks of a packed weight go to the
calls that compute with them, compared by content in decide (``CallMap.weights``).
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.prepare.plan.anchors import PackedBlock
from drifttui.core.prepare.plan.matching import Transferred
from drifttui.core.prepare.plan.plan import CallMap, Plan, WeightCheck
from drifttui.core.result import FUSED, OK


def _subtrees(calls: list) -> dict[int, set[int]]:
    below: dict[int, set[int]] = {c.index: set() for c in calls}
    for c in calls:
        p = c.parent
        while p is not None:
            below[p].add(c.index)
            p = calls[p].parent
    return below


def _region(dep: Any, outs: list[str], ci: int, table: dict, below: set[int], ins: frozenset[str] = frozenset()
            ) -> set[int]:
    """The deployed nodes between call ``ci``'s inputs and its outputs.  A value that is one of the call's inputs
    (``ins``) was computed before it, also when it is its output too: a call the file computes as an identity (a
    pool over a 1x1 map that onnxsim removed) has no node of its own, not its input's producers."""
    seen: set[int] = set()
    stack = list(outs)
    visited: set[str] = set(ins)
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


def _input_values(call: Any, maps: list[CallMap], cm: CallMap) -> frozenset[str]:
    """The deployed values call ``call`` reads: its mapped inputs and the outputs of the calls whose torch outputs it
    takes (a call's input is often no value of the reference plan's inputs)."""
    made = (maps[t.producer[0]].outputs.get(t.producer[1]) for t in call.inputs
            if t.producer is not None and t.producer[0] != call.index and t.producer[0] < len(maps))
    return frozenset(v for v in (*cm.inputs.values(), *made) if v)


def build_transferred_plan(dep: Any, calls: list, ref_plan: Plan, tr: Transferred, ref: Any) -> Plan:
    """The reference's plan carried onto the deployed graph through ``tr``'s matches."""
    to_dep = {r: m.value for r, m in tr.matches.items()}
    to_dep.update(zip(ref.graph_inputs, dep.graph_inputs))
    after = {r: m.value for r, m in tr.downstream.items() if r not in to_dep}    # for the fused notes only
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
        region = _region(dep, list(cm.outputs.values()), cm.call, table, below[cm.call], _input_values(call, maps, cm))
        cm.nodes = sorted(region)
        for ni in region:
            if node_call[ni] is None or call.depth + 1 > depth_of[ni]:
                node_call[ni], depth_of[ni] = cm.call, call.depth + 1
    for ni, ci in enumerate(node_call):
        if ci is not None:
            maps[ci].own.append(ni)
    _state_fused(dep, calls, ref, maps, lost, {**after, **to_dep}, node_call)
    _weight_checks(dep, ref, ref_plan, tr.blocks, maps)
    return Plan(maps, node_call, table, True)


def _weight_checks(dep: Any, ref: Any, ref_plan: Plan, blocks: list[PackedBlock], maps: list[CallMap]) -> None:
    """Each packed block goes to the call that computes with its reference tensor (a query
    Linear's weight, packed in an Attention's QKV weight), to be compared by content in decide."""
    for b in blocks:
        owner = next((ref_plan.node_call[c] for c in ref.consumers.get(b.ref, [])
                      if ref_plan.node_call[c] is not None), None)
        readers = dep.consumers.get(b.tensor, [])
        if owner is None or not readers:
            continue
        n = dep.nodes[readers[0]]
        where = (f"block {b.index + 1} of {b.count} of initializer {b.tensor}, read by {n.op_type} node {n.name}"
                 + (f" ({n.domain})" if n.domain else ""))
        maps[owner].weights.append(WeightCheck(where, b.ref, b.max_abs, b.scale, readers[0], b.rounding))


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
