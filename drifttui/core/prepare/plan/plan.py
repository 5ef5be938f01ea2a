"""The mapping plan's classes: one :class:`CallMap` per module call, and the :class:`Plan` that
``mapping.build_plan`` writes (its one writer) and every later stage reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from drifttui.core.result import OK


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
