"""A module call's precision budget (tolerance.BUDGET_RULE): the budgets of the reduced-precision nodes
its local run computes, and of every reduced node computed before its output; and the model outputs'
budget.  Read from the precision scan (precision.py), the plan and the local runs (local_runs.py)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from drifttui.core.base.tolerance import node_budget
from drifttui.core.prepare.local_runs import run_nodes
from drifttui.core.prepare.precision import LOW_NAMES, PrecisionScan
from drifttui.core.result import OK


@dataclass(frozen=True)
class CallBudget:
    """The precision budget of one module call (relative, of its scale; tolerance.BUDGET_RULE)."""

    fmt: str          # "float16", "int8", "float16+int8": of the reduced nodes its local run computes
    own: float        # budget of its own (local) error: those nodes' budgets
    out: float        # budget of its output error (every reduced node computed before it)
    depth: int        # the longest sum among those nodes
    nodes: tuple[str, ...] = ()    # its reduced-precision nodes (its region's: what keeping it in float32 keeps)
    node_ids: tuple[int, ...] = ()  # ... as node indices
    run_ids: tuple[int, ...] = ()   # the reduced nodes its local run computes (its own error pays for them)


def call_budgets(pscan: PrecisionScan, index: Any, plan: Any, calls: list[Any]) -> tuple[dict[int, CallBudget], float]:
    """Per call (with reduced nodes or downstream of them): its budget; and the model outputs' budget.

    A reduced node belongs to the call whose region holds it (``plan.node_call``, climbed to a mapped
    call: ``nodes``), and its budget counts for every call whose local run computes it (local_runs.py:
    ``run_ids``) and that is that call or called before it (calls are numbered in call order); else for
    the region's call.  They differ where a call's local run computes nodes of a later call's region: a
    MaxPool on a QOperator Conv's integers, and the view's way back before it, sit in the region of the
    next block that reads those integers too."""
    if not pscan.reduced:
        return {}, 0.0
    mapped = {cm.call for cm in plan.calls if cm.status == OK and cm.outputs}
    runs: dict[int, list[int]] = {}
    for c, nodes in run_nodes(index, plan).items():
        for k in nodes:
            runs.setdefault(k, []).append(c)
    node_b = {k: node_budget(p.fmt, index.nodes[k].op_type, p.depth, p.act_step, p.weight_step)
              for k, p in pscan.nodes.items()}
    prefix, run = [], 0.0
    for k in range(len(index.nodes)):
        run += node_b.get(k, 0.0) ** 2
        prefix.append(math.sqrt(run))
    home: dict[int, list[int]] = {}
    paid: dict[int, list[int]] = {}
    for k in pscan.nodes:
        h = _home(k, plan, calls, mapped)
        home.setdefault(h, []).append(k)
        # a node of an earlier call's region reached through a value the local run does not cut (a drifting
        # Linear's output paired with the GELU's `x / sqrt 2`) is that call's computation: inherited, not paid
        for c in sorted({c for c in (_climb(c, calls, mapped) for c in runs.get(k, ())) if c <= h}) or [h]:
            paid.setdefault(c, []).append(k)
    out: dict[int, CallBudget] = {}
    for cm in plan.calls:
        if any(r.dtype in LOW_NAMES for r in calls[cm.call].outputs):
            continue       # the torch model computes this call in low precision itself: the dtype floor applies
        last = max((index.producer[v] for v in cm.outputs.values() if v in index.producer), default=None)
        cum = prefix[last] if last is not None else 0.0
        mine, own = home.get(cm.call, []), paid.get(cm.call, [])
        if cum == 0.0 and not mine and not own:
            continue
        out[cm.call] = CallBudget("+".join(sorted({pscan.nodes[k].fmt for k in own})) or "float32",
                                  math.sqrt(sum(node_b[k] ** 2 for k in own)), cum,
                                  max([1, *(pscan.nodes[k].depth for k in own)]),
                                  tuple(index.nodes[k].name for k in mine), tuple(mine), tuple(own))
    outs = [index.producer[o] for o in index.graph_outputs if o in index.producer]
    return out, max((prefix[k] for k in outs), default=prefix[-1] if prefix else 0.0)


def _home(k: int, plan: Any, calls: list[Any], mapped: set[int]) -> int:
    """The call whose region holds node ``k``."""
    return _climb(plan.node_call[k] if k < len(plan.node_call) else None, calls, mapped)


def _climb(c: Optional[int], calls: list[Any], mapped: set[int]) -> int:
    """``c``, or its nearest mapped ancestor (the root for a node of no call)."""
    while c is not None and c not in mapped and calls[c].parent is not None:
        c = calls[c].parent
    return 0 if c is None else c
