"""The origin's case as data: its stand-alone ONNX model, torch's feeds and expected outputs, the tolerance it is
judged at (``case.py`` builds it from the engine's context; ``evaluate.py`` runs it)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

import numpy as np


@dataclass
class Case:
    model: Any                               # onnx.ModelProto of the origin's own nodes
    feeds: dict[str, np.ndarray]             # graph input -> value (PyTorch side where one exists)
    expected: dict[str, np.ndarray]          # graph output -> the PyTorch-side value
    module: str
    call: int
    sample: int
    atol: float
    rtol: float
    nodes: list[str] = field(default_factory=list)
    onnx_fed: list[str] = field(default_factory=list)   # feeds that only ONNX Runtime could give
    folded: list[str] = field(default_factory=list)     # modules compared with the origin as one unit
    opset: Optional[int] = None
    elem_types: Mapping[str, int] = field(default_factory=dict)   # the index's element types (not a copy)


def judged(case: Case, patch: Any) -> Case:
    """``case`` held to the tolerance ``patch`` is judged at: its own ``rtol`` where its spec names one wider than the
    case's (an opmath patch that leaves only float32 kernels' differences flipping a float16 rounding: the float16
    budget), the case as it is otherwise."""
    rtol = float((getattr(patch, "spec", None) or {}).get("rtol") or 0.0)
    return replace(case, rtol=rtol) if rtol > case.rtol else case
