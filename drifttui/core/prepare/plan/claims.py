"""Which reference value keeps a deployed value that several were matched to (matching.py: ``resolve``),
the twins of a taken value (another name for the same tensor), and the copy a module that returns its
input's value makes of it (``identity_copies``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from drifttui.core.prepare.plan.closeness import Match
from drifttui.core.prepare.plan.nearest import layout_free
from drifttui.core.prepare.plan.value_order import upstream


def resolve(choice: dict[str, Match], dep_vals: dict[str, np.ndarray],
            same_kind: Any = lambda r, d: False, before: Any = lambda r1, r2: False) -> dict[str, Match]:
    """A deployed value equal to some reference value is theirs, and so is its twin (another name
    for the same tensor: a view drifttui reads a blocked NCHWc value through, next to the
    ReorderOutput the file has); otherwise the closest one keeps it, on a tie (one tensor, two names:
    a LayerNorm's output and the Reshape a model returns) the one of its op kind (``same_kind``), then
    the one the other is computed from (``before(r1, r2)``: a module that returns its input's value
    ties with that input; the file computes the input first, ``identity_copies`` finds the module's)."""
    exact_users = {m.value for m in choice.values() if m.exact}
    exact_users |= _twins([m for m in choice.values() if m.exact], {m.value for m in choice.values() if not m.exact},
                          dep_vals)
    closest: dict[str, tuple[float, str]] = {}
    for r, m in choice.items():
        if m.exact:
            continue
        prev = closest.get(m.value)
        if prev is None or m.err < prev[0] or (m.err == prev[0] and _wins(r, prev[1], m.value, same_kind, before)):
            closest[m.value] = (m.err, r)
    return {r: m for r, m in choice.items()
            if m.exact or (m.value not in exact_users and closest[m.value][1] == r)}


def _wins(r: str, prev: str, d: str, same_kind: Any, before: Any) -> bool:
    """On a tie for ``d``: ``r``'s op kind is ``d``'s and ``prev``'s is not, or both alike and ``r`` upstream."""
    mine, theirs = same_kind(r, d), same_kind(prev, d)
    return (mine and not theirs) or (mine == theirs and before(r, prev))


def identity_copies(ref: Any, dep: Any, choice: dict[str, Match], matches: dict[str, Match],
                    cands_of: Callable[[str], list[str]], dep_vals: dict[str, np.ndarray]) -> None:
    """A reference value that lost its deployed value, at the same error, to a reference value it is
    computed from returns that value's numbers (an identity: timm's ``Affine`` of ones and zeros, a
    scale of ones), so the file's copy of it is the module's: the nearest free candidate computed from
    the winner's deployed value that holds exactly its tensor (in place).  None there (the file
    dropped the identity): the module stays fused, as before."""
    taken = {m.value for m in matches.values()}
    winner = {m.value: r for r, m in matches.items()}
    lost = [r for r, m in choice.items() if r not in matches and not m.exact]
    for r in sorted(lost, key=lambda v: sum(upstream(ref, o, v) for o in lost)):       # upstream ones first
        m = choice[r]
        r2 = winner.get(m.value)
        if r2 is None or matches[r2].err != m.err or not upstream(ref, r2, r):
            continue
        held = dep_vals[m.value]
        copies = [d for d in cands_of(r) if d not in taken and dep_vals[d].shape == held.shape
                  and np.array_equal(dep_vals[d], held) and upstream(dep, m.value, d)]
        nearest = [d for d in copies if not any(upstream(dep, o, d) for o in copies if o != d)]
        if nearest:
            matches[r] = Match(nearest[0], m.err, m.exact, m.perm)
            taken.add(nearest[0])
            winner[nearest[0]] = r


def _twins(taken: list[Match], loose: set[str], dep_vals: dict[str, np.ndarray]) -> set[str]:
    """The values of ``loose`` that hold exactly the tensor of a match in ``taken``, read in the
    reference's axis order (a ReorderOutput to channels-last and drifttui's NCHW view of it)."""
    def key(a: np.ndarray) -> tuple:
        return (layout_free(a.shape), a.dtype.str, float(a.max(initial=0)), float(a.min(initial=0)))

    by_key: dict[tuple, list[np.ndarray]] = {}
    for m in taken:
        a = dep_vals[m.value]
        by_key.setdefault(key(a), []).append(np.transpose(a, m.perm) if m.perm is not None else a)
    out = set()
    for v in loose - {m.value for m in taken}:
        b = dep_vals[v]
        if any(t.size == b.size and np.array_equal(b.reshape(-1), t.reshape(-1)) for t in by_key.get(key(b), [])):
            out.add(v)
    return out
