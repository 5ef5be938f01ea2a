"""The matches keep both graphs' order (matching.py): a value that lost its closest deployed value to
one downstream of it takes a free one upstream of the winner's (``second_choices``), and of two
matches out of order one gives way to the closest free value that fits (``in_order``)."""
from __future__ import annotations

from typing import Any, Callable, Optional

from drifttui.core.prepare.plan.anchors import anchor_masks
from drifttui.core.prepare.plan.closeness import Match
from drifttui.core.prepare.plan.nearest import closest, preferring
from drifttui.core.prepare.plan.value_order import upstream


def second_choices(ref: Any, dep: Any, ref_vals: dict, dep_vals: dict, r_mask: dict, d_mask: dict,
                   cands_of: Callable, probes: dict, choice: dict[str, Match], matches: dict[str, Match]) -> None:
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
        if r2 is None or matches[r2].exact or not upstream(ref, r, r2):
            continue
        free = [d for d in cands_of(r)
                if d not in taken and d_mask.get(d, 0) == r_mask.get(r, 0) and upstream(dep, d, m.value)]
        alt = closest(ref_vals[r], r_mask.get(r, 0), free, dep_vals, d_mask, probes, preferring(ref, dep, r))
        if alt is not None:
            matches[r] = alt
            taken.add(alt.value)


def in_order(ref: Any, dep: Any, ref_vals: dict, dep_vals: dict, r_mask: dict, d_mask: dict,
              cands_of: Callable, probes: dict, matches: dict[str, Match]) -> None:
    """The matches keep the reference's graph order: a reference value upstream of another is never
    paired with a deployed value downstream of the other's.  A drift makes every value
    after it differ, so the value closest to an upstream reference value can lie after a later
    module's own (the next norm's Pow of the residual sum looks closer to a drifted o_proj than the
    o_proj MatMul does); structure decides then, not numbers.  Of two matches out of order, the one
    that is not equal and is further from its reference value (the upstream one on a tie) takes
    the closest free value that fits the order of the others, or none (fused)."""
    for _ in range(32):       # each round fixes one pair (rare: a drift's downstream values)
        pair = _out_of_order(ref, dep, matches)
        if pair is None:
            return
        r1, r2 = pair          # r1 upstream of r2 in the reference; their matches are the other way
        m1, m2 = matches[r1], matches[r2]
        lose = r2 if m1.exact or (not m2.exact and m2.err > m1.err) else r1
        del matches[lose]
        alt = _fitting(ref, dep, lose, ref_vals, dep_vals, r_mask, d_mask, cands_of, probes, matches)
        if alt is not None:
            matches[lose] = alt


def _order_masks(index: Any, values: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """(bit of each value, every value's set of those it is computed from or is) as bitmasks."""
    bits = {v: 1 << k for k, v in enumerate(dict.fromkeys(values))}
    return bits, anchor_masks(index, bits)


def _out_of_order(ref: Any, dep: Any, matches: dict[str, Match]) -> Optional[tuple[str, str]]:
    """The first (upstream reference value, downstream one), not both equal, whose matches are in
    reverse order (two equal values are right whatever the order: a fold, a view)."""
    loose = {r: m for r, m in matches.items() if not m.exact}
    if not loose:
        return None
    r_bit, r_anc = _order_masks(ref, list(matches))
    d_bit, d_anc = _order_masks(dep, [m.value for m in matches.values()])
    for r2, m2 in matches.items():
        above = r_anc.get(r2, 0) & ~r_bit[r2]
        if not above:
            continue
        for r1, m1 in (loose if m2.exact else matches).items():
            if r_bit[r1] & above and m1.value != m2.value and d_anc.get(m1.value, 0) & d_bit[m2.value]:
                return r1, r2
    return None


def _fitting(ref: Any, dep: Any, r: str, ref_vals: dict, dep_vals: dict, r_mask: dict, d_mask: dict,
             cands_of: Callable, probes: dict, matches: dict[str, Match]) -> Optional[Match]:
    """The closest free candidate for ``r`` that lies after the matches of the reference values
    before ``r`` and before those of the values after it."""
    cands = [d for d in cands_of(r) if d not in {m.value for m in matches.values()}]
    if not cands:
        return None
    r_bit, r_anc = _order_masks(ref, [*matches, r])
    d_bit, d_anc = _order_masks(dep, [*cands, *(m.value for m in matches.values())])
    before = [m.value for k, m in matches.items() if r_anc.get(r, 0) & r_bit[k]]
    after = [m.value for k, m in matches.items() if r_anc.get(k, 0) & r_bit[r]]
    fit = [d for d in cands
           if not any(d_anc.get(d, 0) & d_bit[a] for a in after)
           and not any(d_anc.get(b, 0) & d_bit[d] for b in before)]
    return closest(ref_vals[r], r_mask.get(r, 0), fit, dep_vals, d_mask, probes, preferring(ref, dep, r))
