"""A patch that leaves only what torch's own float32 rounding leaves: verified to the precision torch itself has.

Two mechanisms can stack at an ill-conditioned origin: a kernel or a lowering that computes otherwise (ONNX Runtime's
``Range`` adding ``delta`` to a float32 running value, 150 times the tolerance), and a function whose float32 value
torch itself holds only to more than the tolerance (a phase ``2 pi f t`` of times torch's vectorised ``arange`` rounds
a unit in the last place apart).  The patch that removes the first cannot bring the file under the tolerance: no
float32 file computes torch's own rounding.  It is the cause all the same when

* torch's own float32 result is over the tolerance from its float64 value (``conditioning.torch_own_error``),
* the patch lowered the origin's error at least ``GAIN`` times (it removed what the file adds), and
* what it leaves is of the size of torch's own float32 error (at most ``OF_SIZE`` times it): the patched file is about
  as close to torch as torch's float32 is to its own float64 value.

Only a patch that names a mechanism (a node's kernel, a constant, an attribute, a rewrite of a lowering, or a
``sequence`` of such: two float16 stories stacked, a Python scalar held in float16 and the roundings ONNX Runtime
drops, whose remainder is torch's own rounding amplified by a ``sin`` of a large argument), never the
whole origin in float64 (``origin_float64``: on an ill-conditioned function that is always closer to the float64
truth than torch, and it is the conditioning counterfactual's story).  The trial is said verified on the origin's
worst sample at this floor, its story saying what is left and why; ``repair`` applies the patch.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional

from drifttui.core.explain.causes.locate.evaluate import Eval

GAIN = 10.0             # the patch lowered the origin's error at least this many times
OF_SIZE = 2.0           # what it leaves is within this factor of torch's own float32 error: of its size
WHOLE = {"origin_float64"}      # a region's float64, not a mechanism


def _named(p: Any) -> bool:
    return p.graph_level and _names_mechanisms(p.spec)


def _names_mechanisms(spec: dict) -> bool:
    """A spec that names mechanisms: one that is not a region's float64, or a ``sequence`` of such specs (two stacked
    stories, ``opmath_stacked.py``'s scalar patches then ``per_op``: each member names its own)."""
    if spec.get("op") == "sequence":
        members = spec.get("patches") or []
        return bool(members) and all(isinstance(m, dict) and _names_mechanisms(m) for m in members)
    return spec.get("rewrite") not in WHOLE


def within_torch_rounding(trials: list[Any], before: Eval, own32: Optional[float],
                          trial: Callable[[Any, Eval], Any]) -> Optional[Any]:
    """The trial (``trial(patch, after)`` builds it) of the patch that left the least error, when that error is no
    more than ``OF_SIZE`` times torch's own float32 error ``own32`` and at least ``GAIN`` times below ``before``; None otherwise."""
    if own32 is None or not math.isfinite(before.max_abs) or before.nonfinite:
        return None
    ran = [t for t in trials if _named(t.patch) and t.after.ok and not t.after.nonfinite
           and math.isfinite(t.after.max_abs) and t.after.max_abs * GAIN <= before.max_abs
           and t.after.max_abs <= OF_SIZE * own32]
    if not ran:
        return None
    best = min(ran, key=lambda t: t.after.max_abs)
    p = best.patch
    left = (f"; what it leaves ({best.after.max_abs:.3g}, from {before.max_abs:.3g}) is of the size of torch's own "
            f"float32 rounding here ({own32:.3g} off its float64 value, over the tolerance): no float32 file computes "
            f"closer to torch, so the patch is verified to the precision torch itself has")
    return trial(dataclasses.replace(p, why=p.why + left),
                 Eval(best.after.max_abs, False))


__all__ = ["GAIN", "within_torch_rounding"]
