"""The scatter reductions ONNX has no reduction for, by their definition in ops every exporter lowers right
(issue 30 point 2, the re-trace route of ``retrace.py``).

ONNX ``ScatterElements`` reduces by none/add/mul/max/min: there is no mean (onnx/onnx#5100).  The TorchScript
exporter refuses ``scatter_reduce(..., "mean")``; the dynamo exporter (torchlib's ``aten_scatter_reduce``)
lowers it as ``ScatterElements(reduction="none")``: each position takes the last value scattered to it,
never divided, and ``include_self`` is not looked at (the GNN inaccuracy of pytorch/pytorch#147617).

torch's definition: the sum of the values scattered to a position (and of ``self`` there when
``include_self``) divided by how many there were (plus one when ``include_self``); a position no index
names keeps ``self``; integer tensors divide with floor rounding.  Written here with two ``scatter_add``
(of the values and of ones: the counts), so the exporters lower it to ScatterElements(reduction="add").
"""
from __future__ import annotations

from typing import Any, Callable

from drifttui.core.model.op_definition import RETRACE, OpDefinition, aten_op


def scatter_reduce(self: Any, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True) -> Any:
    """torch.scatter_reduce for ``reduce="mean"``; every other reduction is left to the exporter
    (NotImplemented: make_fx keeps the op)."""
    import torch

    if reduce != "mean":
        return NotImplemented
    base = self if include_self else self.scatter(dim, index, 0)
    total = base.scatter_add(dim, index, src.to(self.dtype))
    start = torch.ones_like(self) if include_self else torch.zeros_like(self)
    count = start.scatter_add(dim, index, torch.ones(index.shape, dtype=self.dtype))
    count = torch.where(count == 0, torch.ones((), dtype=self.dtype), count)
    if self.is_floating_point():
        return total / count
    return torch.div(total, count, rounding_mode="floor")


def scatter_table() -> dict[Any, Callable[..., Any]]:
    import torch

    return {torch.ops.aten.scatter_reduce.two: scatter_reduce}


# the lowering each definition replaces (the message names it)
WRONG = {"aten.scatter_reduce.two": "ScatterElements(reduction='none'): the last value scattered to a position, "
                                    "never a mean (ONNX has no mean reduction, onnx/onnx#5100)"}

UPSTREAM = "onnx/onnx#5100, pytorch/pytorch#147617"


def _fix(key: str) -> str:
    return (f"write torch.{aten_op(key)}(..., reduce='mean') by its definition (two `scatter_add`: of the values and "
            "of ones, the counts, then divide; `drifttui.core.model.scatter_forms.scatter_reduce`), or "
            f"{RETRACE}; the lowering is reported upstream ({UPSTREAM})")


DEFINITION = OpDefinition(
    "lowering", WRONG, scatter_table,
    "the {exporter} exporter lowers torch's {target} as {lowered}; torch's definition (sums and counts by "
    "scatter_add, include_self honoured) computes what torch computes: ", _fix)
