"""The floor division at every integer ``Div`` of the origin, as one patch.

TorchScript lowers each ``//`` and each ``>>`` of a signed integer to an integer ``Div`` that truncates towards zero
(torch floors).  A model that does it more than once (multi-resolution grid hashing: ``coords >> level`` at each
level, each feeding its own embedding call) is wrong at each of those nodes, and no floor division at one node
alone removes the drift: after the single ``floor_div`` patches, one ``{"op": "sequence"}`` of them all.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.onnx.edit.patches import Patch


def every_int_div(singles: list[Patch]) -> list[Patch]:
    """One patch of every single ``floor_div`` rewrite in ``singles`` (in order), when there are two or more."""
    sites = [p for p in singles if p.spec.get("op") == "rewrite" and p.spec.get("rewrite") == "floor_div"]
    if len(sites) < 2:
        return []
    first: Any = sites[0]
    where = ", ".join(p.spec["node"] for p in sites)
    return [Patch({"op": "sequence", "patches": [p.spec for p in sites]}, first.check,
                  f"{first.why} (the same floor division at all {len(sites)} integer Divs: {where})", first.fix,
                  first.kind, module=first.module, nodes=[n for p in sites for n in p.nodes])]
