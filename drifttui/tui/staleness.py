"""When a step result no longer describes the result on screen.

A step is stale when it ran on another configuration (``config_diff``) OR on another result:
``r`` after the ONNX file was edited gives a new result under the same configuration, and the
old step-3 hazard must not read as current.  :func:`result_key` is a cheap fingerprint of
what a step's answer depends on (verdict, origin, every layer's status and worst errors, the
outputs' errors); :func:`result_diff` says in words how two fingerprints differ.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from drifttui.core.result import Result, display_name


@dataclass(frozen=True)
class ResultKey:
    verdict: str
    origin: str            # the origin's display name, "" when there is none
    numbers: int           # hash of every status and worst error


def result_key(result: Optional[Result]) -> Optional[ResultKey]:
    if result is None:
        return None
    o = result.drift_origin
    origin = "" if o is None else display_name(o.module) + (f"#{o.call}" if o.call else "")
    rows = []
    for layer in result.layers:
        m, loc = layer.metrics, layer.local
        rows.append((layer.module, layer.call, layer.status, m.max_abs.worst if m else None,
                     m.max_rel.worst if m else None, loc.max_abs.worst if loc else None))
    outs = tuple((out.name, out.metrics.max_abs.worst) for out in result.outputs)
    return ResultKey(result.verdict, origin, hash((tuple(rows), outs, result.samples)))


def result_diff(ran_on: Optional[ResultKey], shown: Optional[ResultKey]) -> str:
    """"" when equal (or unknown); else how the result a step ran on differs, in words."""
    if ran_on is None or shown is None or ran_on == shown:
        return ""
    what = ran_on.verdict.upper() + (f" at {ran_on.origin}" if ran_on.origin else "")
    if (ran_on.verdict, ran_on.origin) != (shown.verdict, shown.origin):
        return f"an earlier result ({what})"
    return "an earlier capture (its numbers differ)"
