"""Bisect a set of passes: which pass, disabled, makes a drift go away.

``bisect(fails, candidates)`` assumes nothing about the tool: ``fails(disabled)`` runs the
graph with ``disabled`` switched off and says whether the drift is still there.  One culprit
costs ceil(log2(n)) runs; a drift that two passes each cause on their own is found one pass at a
time (the second search runs with the first culprit disabled), up to ``MAX_CULPRITS``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, FrozenSet, Optional, Sequence

Fails = Callable[[FrozenSet[str]], bool]
MAX_CULPRITS = 3


@dataclass
class Search:
    """The culprits found, and whether disabling exactly them removes the drift."""

    culprits: list[str] = field(default_factory=list)
    verified: bool = False
    runs: int = 0
    trail: list[tuple[tuple[str, ...], bool]] = field(default_factory=list)   # (disabled, drift still there)


def _one(fails: Fails, pool: Sequence[str], base: FrozenSet[str]) -> Optional[str]:
    """The one pass of ``pool`` whose disabling (on top of ``base``) removes the drift, assuming the
    drift is there with ``base`` disabled and gone with ``base`` and all of ``pool`` disabled."""
    pool = list(pool)
    innocent: set[str] = set()
    while len(pool) > 1:
        half = pool[: len(pool) // 2]
        if fails(base | frozenset(innocent) | frozenset(half)):
            innocent |= set(half)            # the drift stays with them off: the culprit is in the rest
            pool = pool[len(half):]
        else:
            pool = half
    return pool[0] if pool else None


def bisect(fails: Fails, candidates: Sequence[str]) -> Search:
    """Find the passes of ``candidates`` whose disabling removes the drift (``fails(frozenset())``
    is assumed true: the caller has seen the drift with nothing disabled)."""
    search = Search()

    def probe(disabled: FrozenSet[str]) -> bool:
        search.runs += 1
        out = fails(disabled)
        search.trail.append((tuple(sorted(disabled)), out))
        return out

    base: frozenset = frozenset()
    for k in range(MAX_CULPRITS):
        rest = [c for c in candidates if c not in base]
        if k and (not rest or probe(base | frozenset(rest))):
            break                            # the drift stays with every candidate off: not theirs
        culprit = _one(probe, rest, base)
        if culprit is None:
            break
        search.culprits.append(culprit)
        base = base | {culprit}
        if not probe(base):                  # verified: exactly these off, the drift is gone
            search.verified = True
            break
    return search
