"""Which reference value keeps a deployed value that several were matched to (matching.py: ``resolve``),
and the twins of a taken value (another name for the same tensor)."""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.prepare.plan.closeness import Match
from drifttui.core.prepare.plan.nearest import layout_free


def resolve(choice: dict[str, Match], dep_vals: dict[str, np.ndarray],
            same_kind: Any = lambda r, d: False) -> dict[str, Match]:
    """A deployed value equal to some reference value is theirs, and so is its twin (another name
    for the same tensor: a view drifttui reads a blocked NCHWc value through, next to the
    ReorderOutput the file has); otherwise the closest one keeps it, on a tie (one tensor, two names:
    a LayerNorm's output and the Reshape a model returns) the one of its op kind (``same_kind``)."""
    exact_users = {m.value for m in choice.values() if m.exact}
    exact_users |= _twins([m for m in choice.values() if m.exact], {m.value for m in choice.values() if not m.exact},
                          dep_vals)
    closest: dict[str, tuple[float, str]] = {}
    for r, m in choice.items():
        if m.exact:
            continue
        prev = closest.get(m.value)
        if prev is None or m.err < prev[0] or (m.err == prev[0] and same_kind(r, m.value)
                                               and not same_kind(prev[1], m.value)):
            closest[m.value] = (m.err, r)
    return {r: m for r, m in choice.items()
            if m.exact or (m.value not in exact_users and closest[m.value][1] == r)}


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
