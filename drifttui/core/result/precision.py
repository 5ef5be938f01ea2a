"""The precision part of a Result: a reduced-precision file's precision, per-layer budget columns.

Plain data like the rest of ``result.py`` (which re-exports both classes); its own module so that
each file stays short.  Documented in ``docs/json-schema.md`` (``precision``, ``layers[].budget``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class LayerBudget:
    """A reduced-precision file: what this layer's precision costs and what it lost (decide writes it)."""

    format: str                     # "float16", "bfloat16", "int8", "float16+int8"; "float32": downstream only
    own_budget: float               # relative budget of its own error (tolerance.BUDGET_RULE)
    out_budget: float               # relative budget of its output (every reduced node before it)
    depth: int                      # the longest sum its nodes compute
    own_loss_db: Optional[float] = None   # SQNR of its own error (torch vs its ONNX nodes fed from torch), worst sample
    loss_db: Optional[float] = None       # SQNR of its output (torch vs ONNX), worst sample
    share: Optional[float] = None         # measured share of the output error it causes (None: not measured)
    over: bool = False                    # its own error is over its budget (decided)
    own_bound: Optional[float] = None     # the worst-case bound of its own error (tolerance.node_budget); own_budget
                                          # is this bound when ``derived`` is "bound"
    measured: Optional[float] = None      # the layer recomputed by PyTorch in the file's precision (sample 0):
                                          # max |d| / max |torch| (None: not recomputed)
    derived: str = "bound"                # "measured": own_budget = min(bound, SAFETY x measured); "bound"
    rounding_explains: bool = False       # its own error is within SAFETY x ``measured``: the file's own rounding
                                          # of this layer explains it (a precision story, never a genuine drift)


@dataclass(frozen=True)
class Precision:
    """The deployed file's precision (core/prepare/precision.py) and, when reduced, the budget verdict."""

    format: str                     # "float32", "float16", "bfloat16", "int8", "float16+int8"
    summary: str                    # one line: schemes, reduced nodes, the evidence
    schemes: list[str] = field(default_factory=list)    # "float16", "int8 dynamic (quantize_dynamic)", ...
    reduced_nodes: int = 0
    nodes: int = 0
    evidence: dict[str, int] = field(default_factory=dict)   # op / initializer counts
    verdict: str = ""               # "within budget" | "over budget" ("" for a float32 file)
    cause: str = ""                 # when over: "precision" (the origin pays for the file's precision, or
                                    # only the outputs are over) | "genuine drift" (the origin is not a
                                    # precision loss: a wrong weight or attribute in the reduced file)
    rule: str = ""                  # tolerance.BUDGET_RULE
    output_budget: float = 0.0      # relative budget of the model outputs
    kernels: str = ""               # an int8 file: the CPU features its results depend on (runtime/cpu.py)
