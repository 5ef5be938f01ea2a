"""A reference value a Transpose links to a matched value: that value's match read through the
permutation (matching.py: ``through_transposes``)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.prepare.plan.closeness import EQUAL_RTOL, Match, err as _err


def through_transposes(ref: Any, wanted: list[str], ref_vals: dict, dep_vals: dict,
                       matches: dict[str, Match]) -> None:
    """A reference value left unmatched that a Transpose of the reference links to a matched value
    (``w = Transpose(r)`` or ``r = Transpose(w)``) is that value's match read through the
    permutation: the structure says the axis order, so this holds when a drift upstream changed the
    numbers (the sample-0 search above pairs through a permutation only values that are equal).  So does
    one matched farther than that (a view of a model output, absorbed.py, whose one deployed value the
    output itself took: the search gave the view the next closest value, the norm's own input)."""
    for r in wanted:
        a = ref_vals.get(r)
        if a is None or (r in matches and matches[r].exact):
            continue
        links = []
        p = ref.producer.get(r)
        if p is not None and ref.nodes[p].op_type == "Transpose":
            links.append((ref.nodes[p].inputs[0], _perm_of(ref.nodes[p])))
        for c in ref.consumers.get(r, []):
            n = ref.nodes[c]
            if n.op_type == "Transpose" and n.outputs and _perm_of(n) is not None:
                links.append((n.outputs[0], tuple(int(i) for i in np.argsort(_perm_of(n)))))
        for w, perm in links:
            m = matches.get(w)
            if m is None or m.perm is not None or perm is None or dep_vals[m.value].shape != ref_vals[w].shape:
                continue
            b = np.transpose(dep_vals[m.value], perm)
            if b.shape == a.shape:
                err = _err(a, b, float(np.max(np.abs(a))) if a.size else 0.0)
                if r not in matches or err < matches[r].err:
                    matches[r] = Match(m.value, err, err <= EQUAL_RTOL, perm)
                break


def _perm_of(node: Any) -> Optional[tuple]:
    for at in node.proto.attribute:
        if at.name == "perm":
            return tuple(int(i) for i in at.ints)
    return None
