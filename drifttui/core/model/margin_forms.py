"""The multi-label margin loss by torch's definition (issue 30 point 2, the re-trace route of ``retrace.py``):
``aten.multilabel_margin_loss_forward`` (``F.multilabel_margin_loss``, ``nn.MultiLabelMarginLoss``).

torch's kernel reads each row's target classes up to the first -1 and sums, for each of those classes j and
each class i that is not a target, ``max(0, 1 - (x[j] - x[i]))``, divided by the number of classes.  The
TorchScript exporter has no lowering; the dynamo exporter lowers the op through torch's own decomposition
(``torch/_decomp/decompositions.py``), which masks the target slots after the first -1 to class 0 for the
gather but never drops them from the sum: every row with a -1 adds the margins of class 0 once per slot
after it (``F.multilabel_margin_loss`` of a 32-class row with 2 targets: 1.7 in torch, 61 in the file).

The definition here keeps only the slots before the first -1 (those before the least index of a -1), for every
reduction the op takes; it returns ``(loss, is_target)`` as the op does.  It has no guard: whether a row holds a
-1 is data, which no FX argument tells (the dynamo exporter decomposes the call before any story reads it); a
call whose rows hold none computes the same either way, and the re-trace then verifies nothing.
"""
from __future__ import annotations

from typing import Any, Callable

from drifttui.core.model.op_definition import RETRACE, OpDefinition

_MEAN, _SUM = 1, 2          # torch's Reduction enum: 0 none, 1 mean, 2 sum


def multilabel_margin_loss_forward(x: Any, target: Any, reduction: int) -> Any:
    """torch's multilabel_margin_loss_forward: (loss, is_target) for a vector or a batch of rows."""
    import torch

    vec = x.dim() == 1
    xb, tb = (x.unsqueeze(0), target.unsqueeze(0)) if vec else (x, target)
    classes = xb.shape[-1]
    slot = torch.arange(tb.shape[-1]).view(1, -1)
    end = torch.where(tb < 0, slot, torch.full_like(slot, tb.shape[-1])).amin(-1, keepdim=True)
    valid = slot < end                                                      # the slots before the first -1
    idx = torch.where(valid, tb, torch.zeros_like(tb))
    picked = torch.arange(classes).view(1, 1, classes) == idx.unsqueeze(-1)  # (N, slot, class)
    is_target = torch.logical_and(picked, valid.unsqueeze(-1)).any(1)                     # (N, class)
    xt = torch.gather(xb, -1, idx)                                          # (N, slot)
    margins = (1.0 - xt.unsqueeze(-1) + xb.unsqueeze(1)).clamp_min(0)       # (N, slot, class)
    keep = torch.logical_and(valid.unsqueeze(-1), torch.logical_not(is_target.unsqueeze(1)))
    loss = torch.where(keep, margins, torch.zeros_like(margins)).sum((1, 2)) / classes
    if reduction == _MEAN:
        loss = loss.mean()
    elif reduction == _SUM:
        loss = loss.sum()
    elif vec:
        loss = loss.squeeze(0)
    is_target = is_target.to(x.dtype)
    return loss, (is_target.squeeze(0) if vec else is_target)


def margin_table() -> dict[Any, Callable[..., Any]]:
    import torch

    return {torch.ops.aten.multilabel_margin_loss_forward.default: multilabel_margin_loss_forward}


WRONG = {"aten.multilabel_margin_loss_forward.default":
         "torch's own decomposition, which keeps the target slots after the first -1 in the sum (as class 0)"}


def _fix(key: str) -> str:
    return ("write the loss by its definition before exporting (`drifttui.core.model.margin_forms."
            "multilabel_margin_loss_forward`: only the targets before the first -1, each against every non-target "
            f"class), or {RETRACE}; report torch's decomposition of {key} to pytorch (torch/_decomp) with "
            "`drifttui repro`")


DEFINITION = OpDefinition(
    "lowering", WRONG, margin_table,
    "the {exporter} exporter lowers torch's {target} as {lowered}; torch's definition (the targets before the "
    "first -1 only) computes what torch computes: ", _fix)
