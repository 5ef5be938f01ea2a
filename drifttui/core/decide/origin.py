"""The drift origin's record: the Result's Origin of a decided layer, the sample a diagnosis starts from (the one
furthest over the tolerance, not the one of the largest error), and what its precision budget says of it."""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.decide.rules import Rules
from drifttui.core.result import Layer, Origin


def rounding_explained(layers: list[Layer], origin: Optional[int]) -> bool:
    b = layers[origin].budget if origin is not None else None
    return bool(b is not None and b.rounding_explains)


def over_budget(layers: list[Layer], origin: Optional[int]) -> bool:
    b = layers[origin].budget if origin is not None else None
    return bool(b is not None and b.over)


def worst_failing(cap: Any, layers: list[Layer], origin: Optional[int], atol: float, rules: Rules) -> Optional[int]:
    """The sample whose error at the origin is furthest over its rule: its own error where it was measured, else
    its output's.  At a larger scale the sample of the largest error can be within the tolerance while another
    fails (a cancellation scaled up): steps and patches re-measured on that one would see no drift."""
    if origin is None:
        return None
    call = layers[origin].index          # the capture's and the rules' key: the call's position
    own = (cap.local or {}).get(call)
    if own is not None and own.samples:
        return own.most_over(atol, rules.own(call), not rules.measured(call))
    out = (cap.glob or {}).get(call)
    return out.most_over(atol, rules.out(call)) if out is not None and out.samples else None


def make_origin(layers: list[Layer], origin: Optional[int], worst: Optional[int] = None) -> Optional[Origin]:
    """The Origin of layer ``origin``; ``worst``: the sample furthest over the tolerance (else the sample of the
    largest error)."""
    if origin is None:
        return None
    L = layers[origin]
    m = L.metrics
    largest = L.local.max_abs.worst_sample if L.local else (m.max_abs.worst_sample if m else -1)
    return Origin(
        layer=L.index, module=L.module, cls=L.cls, call=L.call, onnx_values=L.onnx_values,
        op_types=L.op_types,
        max_abs=m.max_abs.worst if m else float("nan"),
        max_rel=m.max_rel.worst if m else float("nan"),
        local_max_abs=L.local.max_abs.worst if L.local else None,
        worst_sample=worst if worst is not None else largest,
    )
