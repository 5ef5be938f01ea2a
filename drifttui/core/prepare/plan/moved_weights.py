"""A deployed value computed before a weight its reference value's own node applies: not that value.

The anchor set of a value is every weight upstream of it, so it cannot tell a Linear's output from the
MatMul before its bias once the same bias was applied upstream already: the second call of a shared module
(ALBERT's one layer, called for every layer) has the first call's bias in its anchors.  The transformers
optimizer moves the Linear's bias into the GELU after it (``FastGelu(MatMul, bias)``): call 1's Linear was
``fused`` (its MatMul lacks the bias anchor), but call 2's bias-less MatMul was paired with the Linear's value
and compared raw: a false DRIFT at ``ffn`` (call 2), max rel 0.63, the model outputs equal.

Told by structure: the reference value's producer reads a weight that, in the deployed file, is read by a
reader of the candidate and not by the candidate's producer.  The weight was applied after the candidate.
"""
from __future__ import annotations

from typing import Any, Callable


def candidate_lists(ref: Any, dep: Any, anchors: dict[str, str], twins: dict[str, str],
                    pool: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """Reference value -> its deployed candidates (``pool``'s, of its shape) less those computed before a weight
    its own node applies; each list made once."""
    by_ref = moved_weights(anchors, twins)
    made: dict[str, list[str]] = {}

    def of(r: str) -> list[str]:
        if r not in made:
            made[r] = [d for d in pool(r) if not applied_later(ref, dep, r, d, by_ref, twins)]
        return made[r]
    return of


def moved_weights(anchors: dict[str, str], twins: dict[str, str]) -> dict[str, set[str]]:
    """Reference weight (by its first twin) -> the deployed initializers anchored on it."""
    out: dict[str, set[str]] = {}
    for d, r in anchors.items():
        out.setdefault(twins.get(r, r), set()).add(d)
    return out


def applied_later(ref: Any, dep: Any, r: str, d: str, by_ref: dict[str, set[str]], twins: dict[str, str]) -> bool:
    """True when a weight that ``r``'s own node reads is, in the deployed file, read after ``d`` (by a reader
    of ``d``) and not by ``d``'s own node."""
    p = ref.producer.get(r)
    if p is None:
        return False
    own = {x for w in ref.nodes[p].inputs if w in ref.initializers for x in by_ref.get(twins.get(w, w), ())}
    if not own:
        return False
    q = dep.producer.get(d)
    if q is not None and own & set(dep.nodes[q].inputs):
        return False
    return any(own & set(dep.nodes[c].inputs) for c in dep.consumers.get(d, []))
