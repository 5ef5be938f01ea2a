"""Pair each PyTorch module call with the ONNX value(s) that carry its output.

By scope *boundary*, never by value name: a call's outputs are values produced inside its
scope and consumed outside it.  Modules without ONNX nodes are reported ``fused`` (their
parameters were folded into a neighbour) or ``not_exported``; nothing is compared against
a value it does not own.  See docs/how-it-works.md.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.runtime.torch_hooks import Call
from drifttui.core.prepare.plan.autocast import note_autocast
from drifttui.core.prepare.plan.folding import Fold, containers_of_folds, fused_into, innermost, torchscript_folds
from drifttui.core.onnx.graph import DYNAMO, TORCHSCRIPT, GraphIndex
from drifttui.core.prepare.plan.pairing import (Resolver, TorchInputs, dtype_ok, pair_by_content,
                                               pair_inputs_by_content, pair_outputs, scopeless_adoptions, shape_ok)
from drifttui.core.prepare.plan.plan import CallMap, Plan
from drifttui.core.prepare.plan.repeats import groups_by_shape, split_calls
from drifttui.core.prepare.plan.scopes import in_call_order, resolve_torchscript
from drifttui.core.prepare.plan.ts_callers import CALL_KEY, called_from
from drifttui.core.prepare.plan.ts_twins import as_one, twins
from drifttui.core.result import FUSED, NOT_EXPORTED, OK, UNMAPPED

def build_plan(index: GraphIndex, calls: list[Call], module_names: list[str],
               module_has_params: dict[str, bool], aliases: Optional[dict[str, str]] = None,
               resolve: Optional[Resolver] = None,
               torch_outputs: Optional[dict[int, list[Any]]] = None,
               torch_inputs: Optional[TorchInputs] = None) -> Plan:
    """``aliases``: other names of a shared module -> the name the hooks use.
    ``resolve`` runs ONNX Runtime on sample 0 for the given values; with ``torch_outputs``
    (sample 0 outputs of multi-output calls) it pairs same-shaped outputs by content, with
    ``torch_inputs`` (sample 0 inputs of the given (call, position)s) same-shaped inputs.

    The mapping's ordered passes over one Plan: scope chains per node, instance keys to calls,
    node ownership, then pairing, folds and classification."""
    if not calls:
        return Plan([], [None] * len(index.nodes), {}, False, "no module calls were recorded")
    maps = [CallMap(c.index) for c in calls]
    if index.flavour not in (DYNAMO, TORCHSCRIPT) or not index.has_scopes:
        why = ("the ONNX file carries no module scopes (neither torch dynamo metadata nor "
               "TorchScript node paths), so values cannot be tied to modules")
        plan = Plan(maps, [None] * len(index.nodes), {}, False, why)
        _map_root_only(index, calls, plan)
        return plan
    aliases = aliases or {}
    resolved: dict[tuple[str, str], Optional[str]] = {}
    chains = _node_chains(index, module_names, aliases, resolved)
    # modules TorchScript names alike are read as the calls of one module (ts_twins.py)
    one = as_one(calls, twins(resolved, _module_children(module_names, aliases), set(module_names) | set(aliases),
                              aliases))
    key_to_call = _keys_to_calls(index, one, chains, maps)
    if index.flavour == TORCHSCRIPT and called_from(one, chains, key_to_call):
        maps = [CallMap(c.index) for c in calls]        # the outer keys were wrong: keyed again by the callers
        key_to_call = _keys_to_calls(index, one, chains, maps)
    plan = Plan(maps, _assign_nodes(chains, key_to_call, maps), {}, True)
    for ci, adopt in scopeless_adoptions(index, calls, plan):
        _adopt(plan, calls, ci, adopt)
    pairing = pair_outputs(index, calls, plan)
    for ci, outs in pairing.outputs.items():
        plan.calls[ci].outputs.update(outs)
    for ci, note in pairing.unmapped.items():
        plan.calls[ci].status, plan.calls[ci].note = UNMAPPED, note
    if pairing.ambiguous and resolve is not None and torch_outputs:
        for ci, outs in pair_by_content(index, calls, plan, pairing.ambiguous, resolve, torch_outputs).items():
            plan.calls[ci].outputs = outs
    for fold in torchscript_folds(index, calls, plan, module_has_params):
        _apply_fold(index, calls, plan, fold)
    _classify_empty(index, calls, plan, module_has_params)
    note_autocast(index, calls, plan)       # a dynamo autocast region's calls: computed in the caller's scope
    containers_of_folds(calls, plan)
    ambiguous_inputs = _pair_inputs(index, calls, plan)
    if ambiguous_inputs and resolve is not None and torch_inputs is not None:
        for value, (ci, pos) in pair_inputs_by_content(ambiguous_inputs, plan.table, resolve, torch_inputs).items():
            plan.calls[ci].inputs[pos] = value
            plan.table[value] = ("in", ci, pos)
    return plan


def _adopt(plan: Plan, calls: list[Call], ci: int, adopt: list[int]) -> None:
    """Call ``ci`` takes the scope-less nodes ``adopt`` (pairing.scopeless_adoptions), and so do its parents."""
    cm = plan.calls[ci]
    for ni in adopt:
        old = plan.node_call[ni]
        if old is not None and ni in plan.calls[old].own:
            plan.calls[old].own.remove(ni)
        plan.node_call[ni] = ci
        p: Optional[int] = ci
        while p is not None and p != old:
            if ni not in plan.calls[p].nodes:
                plan.calls[p].nodes.append(ni)
            p = calls[p].parent
    cm.own = sorted(set(cm.own) | set(adopt))
    cm.nodes.sort()


def _apply_fold(index: GraphIndex, calls: list[Call], plan: Plan, fold: Fold) -> None:
    """The BatchNorm call takes the Conv's folded node and value (folding.torchscript_folds)."""
    cm, src = plan.calls[fold.bn], plan.calls[fold.conv]
    if not cm.nodes:
        cm.outputs = {0: fold.value}
    src.outputs = {}
    for ni in src.own:
        plan.node_call[ni] = cm.call
    cm.own.extend(src.own)
    cm.nodes.extend(n for n in src.nodes if n not in cm.nodes)
    cm.nodes.sort()
    cm.own.sort()
    src.own, src.nodes = [], []
    src.status, src.folded_into = FUSED, cm.call
    src.note = (f"folded into {calls[fold.bn].module or '(root)'}: its one ONNX node "
                f"({index.nodes[index.producer[fold.value]].op_type}, with a folded weight) computes both")
    cm.note = (f"its batch norm is computed by the node of {calls[fold.conv].module} (Conv+BatchNorm folded "
               "together)")


def _module_children(module_names: list[str], aliases: dict[str, str]) -> dict[str, list[str]]:
    """Parent module -> the modules directly below it (walking over non-module attribute paths)."""
    children: dict[str, list[str]] = {}
    known = set(module_names) | set(aliases)
    for name in list(module_names) + list(aliases):
        if name:
            parent = name.rsplit(".", 1)[0] if "." in name else ""
            while parent and parent not in known:
                parent = parent.rsplit(".", 1)[0] if "." in parent else ""
            children.setdefault(parent, []).append(name)
    return children


def _node_chains(index: GraphIndex, module_names: list[str], aliases: dict[str, str],
                 resolved: dict[tuple[str, str], Optional[str]]) -> list[list[tuple[str, str]]]:
    """Each node's chain of (module, instance key), outermost first, the root ("", "") in front; ``resolved``
    collects how TorchScript's scope segments were read."""
    children = _module_children(module_names, aliases)
    known = set(module_names) | set(aliases)
    chains: list[list[tuple[str, str]]] = []
    for node in index.nodes:
        scope = node.scope or []
        if index.flavour == TORCHSCRIPT:
            chain = resolve_torchscript(scope, children, resolved, aliases)
        else:
            chain = [(s, "") for s in scope if s in known]
        # a shared module's other names are the same module, called again
        chain = [(aliases.get(m, m), f"{m}/{k}" if m in aliases else k) for m, k in chain]
        chains.append([("", "")] + chain)
    if index.flavour == DYNAMO:
        _instances_by_runs(index, chains)
    return chains


def _keys_to_calls(index: GraphIndex, calls: list[Call], chains: list[list[tuple[str, str]]],
                   maps: list[CallMap]) -> dict[tuple[str, str], int]:
    """(module, instance key) -> torch call; calls that cannot be told apart are marked unmapped."""
    calls_of: dict[str, list[int]] = {}
    for c in calls:
        calls_of.setdefault(c.module, []).append(c.index)
    instances: dict[str, list[str]] = {}
    # a module's keys in the order the file's own scopes first name them: a scope the index filled in for a
    # scope-less node (a shared weight's Identity at the top of the file) is a guess and comes last
    for ni in sorted(range(len(chains)), key=lambda i: index.nodes[i].scope_filled):
        for mod, key in chains[ni]:
            lst = instances.setdefault(mod, [])
            if key not in lst:
                lst.append(key)
    key_to_call: dict[tuple[str, str], int] = {}
    for mod, keys in instances.items():
        torch_calls = calls_of.get(mod, [])
        if not torch_calls:
            continue
        if all(k.startswith(CALL_KEY) for k in keys):     # keyed by the call itself (ts_callers.py)
            key_to_call.update({(mod, k): int(k[len(CALL_KEY):]) for k in keys})
            continue
        if len(keys) == len(torch_calls):
            keys = in_call_order(keys) if index.flavour == TORCHSCRIPT else keys
            key_to_call.update({(mod, key): ci for key, ci in zip(keys, torch_calls)})
        elif len(keys) < len(torch_calls) and index.flavour == DYNAMO and (
                split := _split_repeats(index, chains, mod, keys, len(torch_calls))) is not None:
            key_to_call.update({(mod, key): ci for key, ci in zip(split, torch_calls)})
        elif len(torch_calls) == 1:
            key_to_call.update({(mod, key): torch_calls[0] for key in keys})
        elif len(keys) < len(torch_calls) and (
                picked := _groups_by_shape(index, calls, chains, mod, keys, torch_calls)) is not None:
            key_to_call.update({(mod, key): torch_calls[j] for key, j in zip(keys, picked)})
            for j, ci in enumerate(torch_calls):
                if j not in picked:
                    maps[ci].status = FUSED
                    maps[ci].note = (f"no node group of its own: the exporter computed this call of {mod} once "
                                     "with another identical one (same input, a shared module), so the ONNX value "
                                     "of that other call stands for both")
        else:
            for ci in torch_calls:
                maps[ci].status = UNMAPPED
                maps[ci].note = (f"called {len(torch_calls)} times in PyTorch but {len(keys)} separate "
                                 "node groups carry its scope in ONNX; the calls cannot be told apart")
    return key_to_call


def _groups_by_shape(index: GraphIndex, calls: list[Call], chains: list[list[tuple[str, str]]], mod: str,
                     keys: list[str], torch_calls: list[int]) -> Optional[list[int]]:
    """Fewer node groups than calls: each group takes the next call its boundary shape fits (repeats.py)."""
    groups: dict[str, list[int]] = {}
    for ni, ch in enumerate(chains):
        for m, key in ch:
            if m == mod and index.nodes[ni].op_type != "Constant":
                groups.setdefault(key, []).append(ni)
    return groups_by_shape(index, [groups.get(k, []) for k in keys],
                           [calls[ci].outputs[0].shape if calls[ci].outputs else () for ci in torch_calls])


def _assign_nodes(chains: list[list[tuple[str, str]]], key_to_call: dict[tuple[str, str], int],
                  maps: list[CallMap]) -> list[Optional[int]]:
    """Fill each call's nodes (inside its scope) and own nodes (deepest there); each node's deepest call."""
    node_call: list[Optional[int]] = []
    for ni, ch in enumerate(chains):
        deepest: Optional[int] = None
        for mod, key in ch:
            ci = key_to_call.get((mod, key))
            if ci is not None:
                maps[ci].nodes.append(ni)
                deepest = ci
        node_call.append(deepest)
        if deepest is not None:
            maps[deepest].own.append(ni)
    return node_call


def _instances_by_runs(index: GraphIndex, chains: list[list[tuple[str, str]]]) -> None:
    """Dynamo scopes do not number repeated calls: a module's nodes form one contiguous run per call.

    Constant nodes never break a run. A run that holds several back-to-back calls of the same
    module (``act(act(x))``) is split later, by its repeating op-type pattern.
    """
    last_seen: dict[str, int] = {}
    run_id: dict[str, int] = {}
    prev_real: Optional[int] = None
    for ni, ch in enumerate(chains):
        constant = index.nodes[ni].op_type == "Constant"
        for pos, (mod, _) in enumerate(ch):
            if mod == "":
                continue
            if not constant and last_seen.get(mod, -2) != prev_real:
                run_id[mod] = run_id.get(mod, -1) + 1
            if not constant:
                last_seen[mod] = ni
            ch[pos] = (mod, str(run_id.get(mod, 0)))
        if not constant:
            prev_real = ni


def _split_repeats(index: GraphIndex, chains: list[list[tuple[str, str]]], mod: str,
                   keys: list[str], wanted: int) -> Optional[list[str]]:
    """Split runs holding several calls (core/prepare/plan/repeats.py: data dependency, then op pattern)."""
    runs: dict[str, list[int]] = {}
    for ni, ch in enumerate(chains):
        for m, key in ch:
            if m == mod and index.nodes[ni].op_type != "Constant":
                runs.setdefault(key, []).append(ni)
    groups = split_calls(index, [runs.get(k, []) for k in keys], wanted)
    if groups is None:
        return None
    part_of = {ni: j for j, g in enumerate(groups) for ni in g}
    new_keys = [f"p{j}" for j in range(len(groups))]
    first_of_run = {k: next((part_of[n] for n in runs.get(k, []) if n in part_of), 0) for k in keys}
    for ni, ch in enumerate(chains):
        # Constant nodes of a run go with the run's first call
        chains[ni] = [(m, f"p{part_of[ni]}" if ni in part_of else f"p{first_of_run.get(kk, 0)}")
                      if m == mod else (m, kk) for m, kk in ch]
    return new_keys


def _classify_empty(index: GraphIndex, calls: list[Call], plan: Plan, has_params: dict[str, bool]) -> None:
    for cm in plan.calls:
        call = calls[cm.call]
        if cm.status != OK or cm.outputs:
            continue
        if cm.nodes:
            cm.status = UNMAPPED
            cm.note = cm.note or "its output is not produced inside its scope"
            continue
        if has_params.get(call.module):
            params = {p[0] for p in call.params}
            users = sorted({calls[ci].module or "(root)" for ni, ci in enumerate(plan.node_call)
                            if ci is not None and set(index.nodes[ni].inputs) & params})
            into = fused_into(index, calls, plan, cm.call) if not users else None
            if into is not None:
                cm.status, cm.folded_into = FUSED, into
                cm.note = cm.note or (f"no ONNX node of its own: folded into {calls[into].module or '(root)'}'s "
                                      "node (e.g. Conv+BatchNorm folding), which reads this module's input")
            elif users:
                cm.status = FUSED
                cm.folded_into = _sole_reader(index, calls, plan, cm.call)
                cm.note = cm.note or ("no ONNX node of its own: its parameters were folded into a "
                                      f"neighbouring node, e.g. Conv+BatchNorm folding (used by {', '.join(users[:3])})")
            else:
                cm.status = NOT_EXPORTED
                cm.note = cm.note or ("no ONNX node and its parameters are not in the graph: the exporter "
                                      "removed it (its output does not reach the model outputs, or it was "
                                      "constant-folded)")
            continue
        cm.status = NOT_EXPORTED
        cm.note = cm.note or "no ONNX node of its own (identity in eval mode, or folded away)"


def _pair_inputs(index: GraphIndex, calls: list[Call], plan: Plan) -> dict[int, list[tuple[list[int], list[str]]]]:
    """Fill the torch table: mapped outputs first, then inputs of calls fed by functional ops.  Returns the
    inputs shape cannot pair: call -> [(its torch inputs of one shape and dtype, the free values that fit)]."""
    table: dict[str, tuple[str, int, int]] = {}
    ambiguous: dict[int, list[tuple[list[int], list[str]]]] = {}
    # deeper calls win for a shared output value (the child computed it, not the container)
    for cm in sorted(plan.calls, key=lambda c: calls[c.call].depth):
        for pos, v in cm.outputs.items():
            table[v] = ("out", cm.call, pos)
    for cm in plan.calls:
        call = calls[cm.call]
        if not cm.nodes or call.parent is None:
            continue
        nodes = set(cm.nodes)
        bins: list[str] = []
        for ni in sorted(nodes):
            for v in index.nodes[ni].inputs:
                if (v and v not in bins and not index.is_static(v)
                        and (index.producer.get(v) is None or index.producer[v] not in nodes)):
                    bins.append(v)
        free = [v for v in bins if v not in table]
        pending: list[tuple[int, Any]] = []
        for pos, ref in enumerate(call.inputs):
            if ref.producer is not None:
                src = plan.calls[ref.producer[0]]
                if ref.producer[1] in src.outputs:
                    continue   # produced by a mapped module: its ONNX value is that module's output
                if src.status == FUSED and not src.nodes and src.folded_into == cm.call:
                    # folded into this call's nodes (Conv + BatchNorm): those nodes read what the
                    # folded call read, so its inputs (not this call's) are the values fed in
                    for fpos, fref in enumerate(calls[src.call].inputs):
                        if fref.producer is None or fref.producer[1] not in plan.calls[fref.producer[0]].outputs:
                            _pair_free(index, table, free, src, fpos, fref)
                    continue
            pending.append((pos, ref))
        for pos, ref in pending:
            # torch inputs of one shape and dtype (OPT's positional embedding takes the attention mask and the
            # position ids): shape cannot tell which one a free value is; content decides (pair_inputs_by_content)
            twins = [p for p, r in pending if (r.shape, r.dtype) == (ref.shape, ref.dtype)]
            fits = [v for v in free if _fits_input(index, v, ref)]
            # one value that fits only because its size is unknown here (Funnel's pooled masks and position
            # embeddings, TorchScript): its sample-0 shape decides, as content does for twins
            if (len(twins) > 1 and fits) or (len(fits) == 1 and not _concrete(index.shapes.get(fits[0]))):
                if (twins, fits) not in ambiguous.setdefault(cm.call, []):
                    ambiguous[cm.call].append((twins, fits))
                continue
            _pair_free(index, table, free, cm, pos, ref)
    for pos, name in enumerate(index.graph_inputs):
        table.setdefault(name, ("graph_in", -1, pos))
    plan.table = table
    return ambiguous


def _sole_reader(index: GraphIndex, calls: list[Call], plan: Plan, ci: int) -> Optional[int]:
    """The one call whose nodes read call ``ci``'s parameters and which takes ``ci``'s output."""
    params = {p[0] for p in calls[ci].params}
    readers = {c for ni, c in enumerate(plan.node_call) if c is not None and set(index.nodes[ni].inputs) & params}
    if len(readers) != 1:
        return None
    (q,) = readers
    return q if any(innermost(calls, r.producer) == (ci, 0) for r in calls[q].inputs) else None


def _concrete(shape: Optional[list]) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _fits_input(index: GraphIndex, v: str, ref: Any) -> bool:
    return shape_ok(index.shapes.get(v), ref.shape) and dtype_ok(index.elem_types.get(v), ref.dtype)


def _pair_free(index: GraphIndex, table: dict[str, tuple[str, int, int]], free: list[str], cm: CallMap,
               pos: int, ref: Any) -> None:
    """Pair torch input ``pos`` of ``cm`` with the one free ONNX input of its shape and dtype."""
    ok = [v for v in free if _fits_input(index, v, ref)]
    if len(ok) == 1:
        cm.inputs[pos] = ok[0]
        table[ok[0]] = ("in", cm.call, pos)
        free.remove(ok[0])


def _map_root_only(index: GraphIndex, calls: list[Call], plan: Plan) -> None:
    root = plan.calls[0]
    for pos, _ in enumerate(calls[0].outputs):
        if pos < len(index.graph_outputs):
            root.outputs[pos] = index.graph_outputs[pos]
    for cm in plan.calls[1:]:
        cm.status = UNMAPPED
        cm.note = plan.reason
