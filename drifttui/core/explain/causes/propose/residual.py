"""Two mechanisms at one origin: a patch that removes most of the error, composed with the patch that removes the
rest.

A float16 lowering can be wrong twice over: an unstable composite (``Log(Sigmoid(x))`` of
``binary_cross_entropy_with_logits``, -inf where the float16 Sigmoid rounds to 0) *and* ONNX Runtime's CPU dropping
the float16 rounding torch does at each op (microsoft/onnxruntime#8787).  The stable form alone leaves the rounding
error, the per-op rounding alone leaves the -inf: neither verifies.  When no single patch verified, the graph edit
that lowered the origin's own error the most (at least ``GAIN`` times, or that removed every non-finite element)
is kept, the origin's nodes so patched are proposed the dtype-family patches again (``opmath.py``,
``cast_first.py``: the co-cause of any float16 region), and each pair is tried as one patch, ``{"op": "sequence",
"patches": [first, second]}``, verified like any other and applied by ``repair`` in that order.  Its class and
story are the first patch's (what removed most of the error), the second's named after it.

A patch that makes the file hold torch's own number (``opmath_scalar``: a Python scalar the exporter wrote in float16,
``np.pi`` as 3.140625) is a fact of the file, not a hypothesis: it is composed whatever it gained alone, since the
dropped roundings beside it can move the values as much as the number does (held-out batch 43J: diffusers'
``GaussianFourierProjection`` in float16, each mechanism about half of a phase error of hundreds of radians).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.numerics.cast_first import cast_first_patches
from drifttui.core.explain.causes.propose.numerics.opmath import opmath_patches
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply

GAIN = 10.0         # the first patch lowers the origin's own error at least this many times
TIE = 1.5           # a partial patch within this factor of the best is tried first too
MAX_FIRST = 3
FACTS = ("opmath_scalar",)   # rewrites that put torch's own number where the file holds another


def _partials(trials: list[Any], before: Any) -> list[Any]:
    """The graph edits whose trials lowered the origin's own error the most (the best, and those within ``TIE`` of
    it: two forms of one stable rewrite leave the same error, and only one may round as torch rounds), when the
    best lowered it enough; at most ``MAX_FIRST``."""
    ran = [t for t in trials if t.patch.graph_level and t.patch.spec.get("op") != "sequence" and t.after.ok
           and math.isfinite(t.after.max_abs) and not t.after.nonfinite]
    if not ran:
        return []
    best = min(ran, key=lambda t: t.after.max_abs)
    enough = before.nonfinite > 0 or not math.isfinite(before.max_abs) or best.after.max_abs * GAIN <= before.max_abs
    if not enough:
        return []
    return sorted((t for t in ran if t.after.max_abs <= TIE * best.after.max_abs),
                  key=lambda t: t.after.max_abs)[:MAX_FIRST]


def _fact(spec: dict) -> bool:
    parts = spec.get("patches") if spec.get("op") == "sequence" else [spec]
    return bool(parts) and all(isinstance(p, dict) and p.get("rewrite") in FACTS for p in parts)


def _firsts(trials: list[Any], before: Any) -> list[Any]:
    """The best partial patches (``_partials``), then the fact patches that ran (``FACTS``), whatever they gained."""
    gained = _partials(trials, before)
    facts = [t for t in trials if t.patch.graph_level and _fact(t.patch.spec) and t.after.ok
             and math.isfinite(t.after.max_abs) and not t.after.nonfinite and t not in gained]
    return gained + facts[:MAX_FIRST]


def residual_patches(case: Case, trials: list[Any], before: Any, op: Optional[str] = None) -> list[Patch]:
    """Each best partial patch of ``trials`` (verify's trials: a patch and its ``after`` figure) followed by each
    dtype-family patch of the case it leaves."""
    out = []
    for first in _firsts(trials, before):
        try:
            rest = dataclasses.replace(case, model=apply(case.model, first.patch))
        except PatchError:
            continue
        p1 = first.patch
        for p2 in [*opmath_patches(rest, op), *cast_first_patches(rest, op)]:
            if not p2.graph_level:
                continue
            spec = {"op": "sequence", "patches": [dict(p1.spec), dict(p2.spec)]}
            if _fact(p1.spec):      # the story is the fact's node's call (torch's mul of pi), not the cos it feeds
                spec["decisive"] = (p1.spec.get("patches") or [p1.spec])[0]["node"]
            out.append(dataclasses.replace(
                p1, spec=spec,
                why=f"{p1.why}; the error left ({first.after.text()}) is a second mechanism: {p2.why}",
                fix=f"{p1.fix}; and {p2.fix}", nodes=list(dict.fromkeys([*p1.nodes, *p2.nodes])), siblings=[]))
    return out


__all__ = ["residual_patches"]
