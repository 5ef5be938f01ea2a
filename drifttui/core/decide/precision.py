"""The deployed file's precision verdict: its format, its budget rule, and why an over-budget file
is over ("precision" or "genuine drift"); decide/stage.py calls it with its Rules."""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.base.tolerance import BUDGET_RULE, DERIVED_RULE, GENUINE_SHARE
from drifttui.core.result import Precision
from drifttui.core.runtime.cpu import detect


def precision_of(pr: Any, rules: Any, drifts: bool, origin: Optional[int] = None,
                 own_over: bool = False, other_drift: bool = False, genuine: bool = False,
                 rounded: bool = False) -> Optional[Precision]:
    scan = getattr(pr, "precision", None)
    if scan is None:
        return None
    fmt = "+".join(scan.formats) or "float32"
    return Precision(format=fmt, summary=scan.summary(), schemes=list(scan.schemes),
                     reduced_nodes=len(scan.nodes) - scan.reduced_views, nodes=scan.total - scan.views,
                     evidence=dict(scan.ops),
                     verdict=("over budget" if drifts else "within budget") if scan.reduced else "",
                     cause=("genuine drift" if genuine else cause_of(rules, origin, own_over, other_drift, rounded))
                     if scan.reduced and drifts else "",
                     rule=f"{BUDGET_RULE}; {DERIVED_RULE}" if scan.reduced else "", output_budget=rules.out_budget,
                     kernels=detect().int8_line() if computes_int8(scan) else "")


def computes_int8(scan: Any) -> bool:
    """The file computes with 8-bit integer ops (their results depend on the CPU's kernels)."""
    return "int8" in scan.formats or any(s.startswith("int8") for s in scan.schemes)


def cause_of(rules: Any, origin: Optional[int], own_over: bool, other_drift: bool = False,
             rounded: bool = False) -> str:
    """Why an over-budget file is over: "precision" when its origin pays for the file's precision (its
    reduced nodes over their budget, and computing them in float32 removes a real share of the output
    error, or that share was not measured) or only the outputs are over; "genuine drift" when the
    origin is not a precision loss (no reduced node of its own, within its own budget, or a share of
    about 0: a wrong weight or attribute).  A share of about 0 does not decide it while another layer
    drifts too: that layer's error can dwarf the origin's in the outputs (both stories, issue 33 4c).
    Nor does it when ``rounded``: the origin's own error is what its recomputation in the file's precision
    loses (Rules.rounding_explains), a precision story by measurement, whatever its share of the outputs."""
    if origin is None:
        return "precision"
    b, share = rules.budgets.get(origin), rules.shares.get(origin)
    if not (b is not None and bool(getattr(b, "run_ids", None)) and own_over):
        return "genuine drift"
    return "precision" if share is None or share >= GENUINE_SHARE or other_drift or rounded else "genuine drift"
