"""Which dropped rounding a verified opmath patch restores that matters: the torch op its story names.

A ``per_op`` opmath patch (propose/numerics/opmath.py) computes every float16 / bfloat16 node of the origin in float32 and
rounds each output where torch rounds.  It verifies when ONNX Runtime's dropped rounding is the drift, but it
restores every rounding at once, so it does not say which op's rounding torch's result depends on: the ``add`` of
a ``finfo.min`` mask (a fully masked row made uniform by the rounding), the ``mul`` of rotary angles (ulp 2 past
2048, before ``cos``), the ``pow`` that overflows to inf.  The story used to name the last op of the set that
computes (a ``matmul``, a ``cat``) or the first call whose value differs (the ``cos`` reading the unrounded angle).

``decisive`` tries the rounding of each value alone, in the file's order (every node of the set still in float32), on
the origin's worst sample, and marks the patch with the producer of the first one that removes the drift alone
(``spec["decisive"]``), or, when none does alone (the rounding of the ops after it still counts at the tolerance),
of the one that alone leaves the least error, at most a tenth of it: ``conclude`` names the torch op of that node.
When no rounding is enough alone (a flow warp's coordinate chain: each dropped rounding moves the sample point, and
the ones after it are read unrounded too), each is left out of the verified set in turn: the one whose omission alone
brings back the most of the drift is the one torch's result depends on most (``necessary``), and it is marked (a clamp
whose rounding the floor and the fraction after it read; not the add before it, whose rounding the clamp's own
rounding puts back).  When no omission brings any of it back either (a later rounding puts each back: the field
around 300 whose ``+ 300`` is read by a reshape and a pad before a stencil), the count of elements decides
(``fewest``): the rounding that alone leaves the fewest elements over the tolerance, at most a tenth of those the
set's float32 arithmetic leaves with no rounding restored (its max |d| can stay: a double rounding off by one ulp
where the ``linear`` before it is read unrounded).  Nothing is marked when that node only converts (a model's own
``.half()``: the story names the chain's op as before) or when none of these decides.  The patch ``repair`` applies is the one that verified (every
rounding restored).  At most ``LIMIT`` values are tried, each a run of the cut-out origin.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from drifttui.core.explain.causes.locate.case import Case

LIMIT = 24
# nodes that convert or move a value: when the rounding that matters is a model's own ``.half()`` (a Cast), no op
# that computes is marked, and the story names the op of the chain after it as before (``half_sum``'s sum)
CONVERSIONS = ("Cast", "CastLike", "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Expand")
SHARE = 0.1          # a rounding that alone leaves at most this share of the error is decisive too


def decisive(case: Case, trials: list[Any], check: Callable[[list[Any]], list[Any]], before: float) -> list[Any]:
    """``trials`` with the first verified per_op opmath trial's patch marked by its decisive rounding, if any
    (``check(patches) -> trials`` on the origin's worst sample; ``before``: the origin's local error there)."""
    k = next((i for i, t in enumerate(trials) if t.after.ok and not t.after.fails), None)
    if k is None:
        return trials
    spec = trials[k].patch.spec
    if spec.get("rewrite") != "opmath_float32" or spec.get("form") != "per_op" or len(spec.get("round") or []) < 2:
        return trials
    producer = {o: n.name for n in case.model.graph.node for o in n.output if o}
    ops = {n.name: n.op_type for n in case.model.graph.node}
    rounded = set(spec["round"])
    ordered = [o for n in case.model.graph.node if n.op_type != "Constant" for o in n.output if o in rounded][:LIMIT]
    best, least, alone = None, before * SHARE, {}
    for v in ordered:
        tried = check([dataclasses.replace(trials[k].patch, spec={**spec, "round": [v]})])
        alone[v] = tried[0].after if tried else None
        if not tried or tried[0].after.fails and tried[0].after.max_abs >= least:
            continue
        if tried[0].after.ok and not tried[0].after.fails:
            best = v
            break
        best, least = v, tried[0].after.max_abs
    if best is None:
        computes = lambda v: ops[producer[v]] not in CONVERSIONS     # noqa: E731
        best = necessary(ordered, list(spec["round"]), trials[k].patch, check, computes) \
            or fewest(alone, trials[k].patch, check, computes)
    if best is None or ops[producer[best]] in CONVERSIONS:
        return trials
    marked = dataclasses.replace(trials[k].patch, spec={**spec, "decisive": producer[best]})
    return [*trials[:k], dataclasses.replace(trials[k], patch=marked), *trials[k + 1:]]


def necessary(ordered: list[str], rounded: list[str], patch: Any, check: Callable[[list[Any]], list[Any]],
              computes: Callable[[str], bool]) -> Any:
    """The value of ``ordered`` made by a node that computes (``computes``) whose rounding, left out of the verified
    ``patch``'s set (every other rounding kept), brings back the most of the drift (the first of equals); None when
    leaving out any one is harmless (each is put back by a later one)."""
    best, most = None, 0.0
    for v in ordered:
        if not computes(v):
            continue
        tried = check([dataclasses.replace(patch, spec={**patch.spec, "round": [r for r in rounded if r != v]})])
        if tried and tried[0].after.fails and tried[0].after.max_abs > most:
            best, most = v, tried[0].after.max_abs
    return best


def fewest(alone: dict[str, Any], patch: Any, check: Callable[[list[Any]], list[Any]],
           computes: Callable[[str], bool]) -> Any:
    """Of the values whose rounding was restored alone (``alone``: value -> what it left, in the file's order), the
    first made by a node that computes that leaves the fewest elements over the tolerance, at most ``SHARE`` of those
    ``patch``'s float32 arithmetic leaves with no rounding restored; None when the counts are not known (0) or none
    is that few."""
    none = check([dataclasses.replace(patch, spec={**patch.spec, "round": []})])
    if not none or not none[0].after.ok or none[0].after.n_out <= 0:
        return None
    best, least = None, none[0].after.n_out * SHARE
    for v, left in alone.items():
        if left is None or not left.ok or not computes(v):
            continue
        if left.n_out < least or best is None and left.n_out <= least:
            best, least = v, left.n_out
    return best
