"""The story of a re-trace that verifies through one of drifttui's own definitions of an ATen op (issue 30
point 2: the stable forms of special functions, ``core/model/special_forms.py``; the reductions ONNX has
none for, ``core/model/scatter_forms.py``; the degrees-of-freedom reductions, ``core/model/dof_forms.py``).

The class follows from what the verifying patch changed: a stable form of the same function verifies
(``stability``: the exporter's lowering is the function's unstable textbook form), or torch's definition
of a reduction ONNX lacks does, or torch's ``max(0, N - correction)`` divisor (``lowering``: the exporter's
lowering computes another function), or torch's division by ``divisor_override`` (``core/model/pool_forms.py``), or torch's
fixed-point resize of uint8 images (``core/model/resize_forms.py``).  The
fix names the source change: the call written in the form that verified, and the upstream thread.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from drifttui.core.model.retrace import definition_of


class Told(NamedTuple):
    check: str          # stability | lowering
    why: str            # what the exporter's lowering computes, in words
    fix: str            # the source change
    op: Optional[tuple[str, str]] = None    # (the forward's call, its ATen op) the story is about, when it names one


def told(targets: list[str], exporter: str) -> Optional[Told]:
    """The story of the first target drifttui defines itself (``retrace.DEFINITIONS``), None when none is."""
    for t in targets:
        d = definition_of(t)
        if d is not None:
            return Told(d.check, d.story(t, exporter), d.fix(d.key(t)))
    return None
