"""``torch.histc`` by torch's definition (issue 30 point 2, the re-trace route of ``retrace.py``): ``aten.histc``.

torch's CPU kernel puts a value ``x`` of [min, max] in the bin ``(x - min) * bins / (max - min)``, computed in the
input's dtype and truncated (``max`` itself in the last bin; values outside the range and NaN are not counted;
pytorch/pytorch#87832 set that order of operations).  torchlib's ``aten_histc`` (microsoft/onnxscript#2796) counts
instead the values below each edge, the edges ``min + i * (max - min) / bins`` computed in double and rounded to the
input's dtype: a value on an edge whose ``x - min`` rounds down is one bin lower in torch, one bin higher in the
file.  torch decomposes ``histc`` nowhere, so a re-trace into core ATen keeps it.

The definition here: the same float arithmetic, the bin index by a truncating conversion, and the counts as a sum of
exact comparisons with every bin index (each value is one row of ``bins`` booleans: memory grows with values x
bins).  A call with ``min == max`` (the range taken from the data) or an integer input is left to the exporter
(``NotImplemented``).
"""
from __future__ import annotations

from typing import Any, Callable

from drifttui.core.model.op_definition import RETRACE, OpDefinition


def histc(x: Any, bins: int = 100, min: Any = 0, max: Any = 0) -> Any:  # noqa: A002 - aten's argument names
    """torch.histc by torch's CPU kernel: ``trunc((x - min) * bins / (max - min))``, max in the last bin."""
    import torch

    if not x.is_floating_point() or float(min) == float(max):
        return NotImplemented
    lo, hi = torch.tensor(float(min), dtype=x.dtype), torch.tensor(float(max), dtype=x.dtype)
    flat = x.reshape(-1)
    inside = (flat >= lo) & (flat <= hi)
    index = ((flat - lo) * bins / (hi - lo)).to(torch.int64).clamp(0, bins - 1)
    hits = (index.unsqueeze(-1) == torch.arange(bins)) & inside.unsqueeze(-1)
    return hits.to(x.dtype).sum(0)


def histc_table() -> dict[Any, Callable[..., Any]]:
    import torch

    return {torch.ops.aten.histc.default: histc}


WRONG = {"aten.histc.default": ("counts of the values below each edge, the edges computed in double and rounded "
                                "(microsoft/onnxscript's aten_histc): a value on an edge lands one bin higher than "
                                "torch's truncated (x - min) * bins / (max - min)")}


def _fix(key: str) -> str:
    return ("bin the values yourself as torch does (`((x - min) * bins / (max - min)).long().clamp(0, bins - 1)`, "
            "then a sum of one-hot rows, or `drifttui.core.model.histc_forms.histc`), or " + RETRACE +
            "; report the lowering upstream with `drifttui repro` (microsoft/onnxscript#2796 added it)")


DEFINITION = OpDefinition(
    "lowering", WRONG, histc_table,
    "the {exporter} exporter lowers torch's {target} as {lowered}; torch's definition (each value's bin index "
    "truncated from the same float arithmetic) computes what torch computes: ", _fix)
