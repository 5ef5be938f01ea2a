"""The mapping plan's classes: one :class:`CallMap` per module call, and the :class:`Plan` that
``mapping.build_plan`` writes (its one writer) and every later stage reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS, OK, WEIGHT_NOT_THE_MODELS
from drifttui.core.base.tolerance import bound


@dataclass
class WeightCheck:
    """A weight the deployed file stores in another form than the reference (a block of a packed
    tensor), compared by content: decide fails the call when the difference fails the tolerance
    (the file's weight is not the model's), even when no value of the call is in the file."""

    where: str           # "block 1 of 3 of initializer X, read by Attention node Y"
    ref: str             # the reference initializer it stands for
    max_abs: float       # max |deployed - reference|
    scale: float         # max |reference|
    node: int            # the deployed node reading it (execution order for the origin)
    rounding: float = 0.0   # a float16 / bfloat16 copy may differ by its rounding; an int8 one by a step
    strict: bool = False    # judged at the float32 rtol (plus its rounding), not its call's precision budget:
                            # an int8 weight against the model's tensor (prepare/qweight_check.py)
    ref_kind: str = "the reference's"
    init: str = ""          # a strict check: the file's initializer (repair restores it from the model's tensor)

    def fails(self, atol: float, rtol: float) -> bool:
        return not self.max_abs <= bound(atol, rtol, self.scale, self.rounding)     # NaN: never within

    def note(self, atol: float, rtol: float) -> str:
        return (f"{WEIGHT_NOT_THE_MODELS}: {self.where} differs from {self.ref_kind} {self.ref} "
                f"by max |d| {self.max_abs:.3g} (allowed {bound(atol, rtol, self.scale, self.rounding):.3g}), a drift in the file "
                + ("itself, found by content (not a rounding: a conversion keeps every element within half a step of the model's)"
                   if self.strict else "itself, found by content (no value of its own to compare)"))


@dataclass
class AttrCheck:
    """A node attribute that differs from what its torch module declares (an epsilon, a padding, a
    slope: prepare/attr_check.py). Not a rounding, so no tolerance excuses it: decide fails its call
    at any tolerance, as a genuine drift."""

    where: str           # "QLinearConv node conv_2"
    attr: str            # the ONNX attribute: "pads"
    found: str           # its value in the file: "[2, 1, 0, 1]"
    declared: str        # what the module says: "layer2.0.conv2.padding = (1, 1)"
    node: int            # the deployed node (execution order for the origin)
    strict: bool = True
    restore: Any = None  # the module's value as the attribute (repair sets it back)
    needs_numbers: bool = True   # decide: evidence only where the call's numbers fail the float32 tolerance
    floor: bool = True   # False: those numbers read without the file's dtype floor (a GELU form's difference is
    #                      below float16's rounding: attr_probe.py)
    tensor: Any = None   # (a constant input's tensor, dtype, shape, the module's values): repair puts it back

    def fails(self, atol: float, rtol: float) -> bool:
        return True

    def note(self, atol: float, rtol: float) -> str:
        return (f"{ATTRIBUTE_NOT_THE_MODELS}: {self.where} has {self.attr} {self.found} where the module declares "
                f"{self.declared}, a drift in the file itself (a conversion never changes a module's constant)")


@dataclass
class CallMap:
    call: int
    nodes: list[int] = field(default_factory=list)          # every node inside the call's scope
    own: list[int] = field(default_factory=list)            # nodes whose deepest scope is this call
    outputs: dict[int, str] = field(default_factory=dict)   # torch output position -> ONNX value
    inputs: dict[int, str] = field(default_factory=dict)    # torch input position -> ONNX value
    status: str = OK
    note: str = ""
    folded_into: Optional[int] = None    # FUSED: the call whose nodes compute this one (Conv + BatchNorm)
    weights: list = field(default_factory=list)     # WeightCheck / AttrCheck: a weight compared by content,
                                                    # an attribute against the module's (both genuine drifts)


@dataclass
class Plan:
    calls: list[CallMap]
    node_call: list[Optional[int]]        # deepest call of each node
    table: dict[str, tuple[str, int, int]]  # ONNX value -> ("out"|"in", call, position)
    localized: bool
    reason: str = ""

    def value_owner(self, value: str) -> Optional[int]:
        entry = self.table.get(value)
        return entry[1] if entry else None
