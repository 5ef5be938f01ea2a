"""Deep models (a 16-call stem, a unit, a head: at least 20 module calls) in which a module's output has no
ONNX value of its own because the exporter absorbed its last view into the reader (issue 30 point 6),
imported by drifttui as ``tests/causes/absorbed_forms.py:fn``:

* ``floor_t``: ``absorbed`` returns ``floor_divide(lin(x) * 3, 0.7).t()``; TorchScript truncates
  (Div + Cast) and folds the ``.t()`` into ``mix``'s Gemm (``transA``); the unit's own ``.t()`` is
  folded into the head's Gemm too.  The origin is ``absorbed``, never ``mix`` fed its values;
* ``signbit_t``: ``absorbed`` returns ``signbit(round(lin(x))).float().t()``: the dynamo lowering
  misses -0.0 (TorchScript cannot export signbit);
* ``relu_t``: the same unit computing ``relu(lin(x) * 3).t()``: clean with both exporters;
* ``tied_floor`` / ``tied_signbit``: a weight module ``wt`` (no input) returns ``op(w).t()``, read by
  its parent's ``F.linear``: the exporter constant-folds the module into one constant of the file
  (TorchScript's folding truncates ``floor_divide``; the dynamo optimizer folds ``signbit``'s
  ``x < 0``), so ``wt`` has no node at all and its reader drifted.  The origin is ``wt``;
  ``tied_floor`` is clean with dynamo (a control);
* ``clean_sq``: ``absorbed`` returns a *square* ``(lin(x) * 3).t()``: TorchScript folds the ``.t()``
  into ``mix``'s Gemm, so the value it hands on has the output's shape but is its transpose; compared
  raw, a clean model drifted at ``absorbed``.  Clean with both exporters.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import Deep

WIDTH = 32
ROWS = 6


class FloorT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.floor_divide(self.lin(x) * 3.0, 0.7).t()


class SignbitT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.signbit(torch.round(self.lin(x))).float().t()


class ReluT(nn.Module):
    def __init__(self, out: int = WIDTH) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x) * 3.0).t()


class WeightT(nn.Module):
    """A transposed weight through a drifting op: a square (WIDTH x WIDTH) result, so only content
    tells the folded constant's layout."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(WIDTH, WIDTH))
        self.how = how

    def forward(self) -> torch.Tensor:
        if self.how == "floor":
            y = torch.floor_divide(self.w * 3.0, 0.7) * 0.05
        else:
            y = torch.signbit(torch.round(self.w)).float() * 0.2 - 0.1
        return y.t()


class Tied(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.wt = WeightT(how)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.wt())


class Unit(nn.Module):
    """``absorbed`` (its ``.t()`` read by ``mix``), then the unit's own ``.t()`` read by the head."""

    def __init__(self, absorbed: nn.Module, square: bool = False) -> None:
        super().__init__()
        self.absorbed = absorbed
        self.square = square
        self.mix = nn.Linear(ROWS, WIDTH if square else ROWS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.mix(self.absorbed(x))
        return y if self.square else y.t()


def _deep(kind: type, square: bool = False, **kw: int) -> nn.Module:
    torch.manual_seed(0)
    return Deep(Unit(kind(**kw), square)).eval()


def _tied(how: str) -> nn.Module:
    torch.manual_seed(0)
    return Deep(Tied(how)).eval()


def tied_floor() -> nn.Module: return _tied("floor")                     # noqa: E704
def tied_signbit() -> nn.Module: return _tied("signbit")                 # noqa: E704
def floor_t() -> nn.Module: return _deep(FloorT)                          # noqa: E704
def signbit_t() -> nn.Module: return _deep(SignbitT)                      # noqa: E704
def relu_t() -> nn.Module: return _deep(ReluT)                            # noqa: E704
def clean_sq() -> nn.Module: return _deep(ReluT, square=True, out=ROWS)   # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(ROWS, WIDTH)
