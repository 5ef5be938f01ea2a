"""Whether one value of a graph is computed from another (the matches keep both graphs' order:
match_order.py; of two reference values that tie for one deployed value, the upstream one keeps it:
claims.py)."""
from __future__ import annotations

from typing import Any


def upstream(index: Any, a: str, b: str) -> bool:
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
