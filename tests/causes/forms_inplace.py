"""In-place updates through a view that the TorchScript exporter loses (issue 30 points 3 and 6), imported by
drifttui as ``tests/causes/forms_inplace.py:fn``.  Each still reproduces with torch 2.13 / ONNX Runtime 1.32:
the TorchScript file computes otherwise (most often the module's whole computation is gone, its consumer reads
its input unchanged), the dynamo file (functionalized: ``slice_scatter`` / ``select_scatter``) is right.  The
deep ones sit after forms30's 16-call stem and before a head, the shallow ones after one Linear; the form is
always the child ``body``:

* ``view_scale``: ``y.view(b, 4, -1)[:, 0] *= 3`` (pytorch/pytorch#95050: an update through a view of a view);
* ``named_slice``: ``part = y[:, 8:]; part += 2`` (pytorch/pytorch#122290: the slice held in a variable);
* ``narrow_copy``: ``y.narrow(1, 4, 8).copy_(x[:, :8] * 2)`` (pytorch/pytorch#80271, #19948);
* ``alias_read``: ``head = y[:, :16]; y.mul_(0.5); cat([head, y[:, 16:]])``: a view read after its base was
  updated in place (torch reads the updated values through the alias);
* held out, written after the mechanism and run once (first run in test_forms_inplace.py): ``transposed_add``
  (``y.transpose(1, 2)[:, 0] += c``, shallow), ``unsqueezed_set`` (``y.unsqueeze(0)[0, :, k] = v``, deep);
  ``masked_view`` (``masked_fill_`` through a view) was written as one too, but the TorchScript file is right:
  a clean control; ``y[:, 8:16].index_put_((rows, idx), v, accumulate=True)`` was probed and dropped: the
  TorchScript file does not run in ONNX Runtime (a ``Reshape`` of the wrong size), no drift to diagnose;
* clean controls: ``slice_add`` (``y[:, :4] += 1``: an in-place update TorchScript handles, the indexing
  assignment carries it back), ``masked_view``, ``clone_only`` (``x.clone()``: no node in the TorchScript file
  either, so it gets the Identity too, and its own error is zero), and the dynamo files of the forms.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class ViewScale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.view(x.shape[0], 4, -1)[:, 0] *= 3
        return y


class NamedSlice(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        part = y[:, 8:]
        part += 2
        return y


class NarrowCopy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.narrow(1, 4, 8).copy_(x[:, :8] * 2)
        return y


class AliasRead(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        head = y[:, :16]
        y.mul_(0.5)
        return torch.cat([head, y[:, 16:]], 1)


class SliceAdd(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[:, :4] += 1
        return y


class CloneOnly(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()


class MaskedView(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        v = y.view(x.shape[0], 2, -1)[:, 1]
        v.masked_fill_(v > 0.5, 0.0)
        return y


class TransposedAdd(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone().view(x.shape[0], 4, 8)
        y.transpose(1, 2)[:, 0] += 1.5
        return y.reshape(x.shape[0], -1)


class UnsqueezedSet(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.unsqueeze(0)[0, :, 5] = x[:, 0] * 4
        return y


class ParamSlice(nn.Module):
    """``named_slice`` with a learned shift: a module with a parameter whose whole computation the exporter drops."""

    def __init__(self) -> None:
        super().__init__()
        self.shift = nn.Parameter(torch.linspace(1.0, 3.0, WIDTH - 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        part = y[:, 8:]
        part += self.shift
        return y


def view_scale() -> nn.Module:
    return _deep(ViewScale)


def named_slice() -> nn.Module:
    return _deep(NamedSlice)


def narrow_copy() -> nn.Module:
    return _shallow(NarrowCopy)


def alias_read() -> nn.Module:
    return _deep(AliasRead)


def slice_add() -> nn.Module:
    return _deep(SliceAdd)


def clone_only() -> nn.Module:
    return _deep(CloneOnly)


def masked_view() -> nn.Module:
    return _deep(MaskedView)


def transposed_add() -> nn.Module:
    return _shallow(TransposedAdd)


def unsqueezed_set() -> nn.Module:
    return _deep(UnsqueezedSet)


def param_slice() -> nn.Module:
    return _deep(ParamSlice)


def param_slice_shallow() -> nn.Module:
    return _shallow(ParamSlice)


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
