"""Held-out drift forms for the stable-form and definition route of the make_fx re-trace (issue 30 point 2,
session 24), imported by drifttui as ``tests/causes/forms_special.py:fn``.  None was used to write
``core/model/special_forms.py`` or ``scatter_forms.py`` (those were written from forms33's erfc_log, erfcx,
log_ndtr, scatter_mean); each still reproduces with torch 2.13 / ONNX Runtime 1.32 and the dynamo exporter
(the TorchScript exporter refuses erfc, erfcx and scatter_reduce's mean).  The form is always the child
``body``, inside forms30's deep model (16-call stem, the form, a head) or after one Linear:

* ``gnn_mean``: a message-passing layer's mean aggregation, ``zeros.scatter_reduce(0, dst, messages,
  "mean", include_self=False)`` (the GNN inaccuracy of pytorch/pytorch#147617; ONNX has no mean,
  onnx/onnx#5100): the dynamo file keeps the last message scattered to each node;
* ``normal_logsf``: the log survival function of a Gaussian written by hand, ``log(0.5 * erfc(z / sqrt 2))``
  (``torch.erfc``, not ``special``): ``1 - Erf`` cancels to 0, -inf in the file (microsoft/onnxscript#822);
* ``mills_ratio``: the inverse Mills ratio of a truncated normal, ``1 / erfcx(z)`` (microsoft/onnxscript#1223):
  ``Exp(z^2) * (1 - Erf(z))`` is 0 or NaN, inf or NaN in the file;
* ``erfc_ratio``: ``erfc(z + 0.5) / erfc(z)``, a normal tail ratio: 0 / 0 = NaN in the file;
* clean controls: the same functions at small arguments, and ``scatter_reduce`` with ``amax`` (which the
  dynamo exporter lowers right, include_self=False included).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class GnnMean(nn.Module):
    """One message-passing step over a fixed 6-node graph: messages along edges, aggregated by mean."""

    def __init__(self, reduce: str = "mean") -> None:
        super().__init__()
        self.reduce = reduce
        self.message = nn.Linear(WIDTH, WIDTH)
        self.register_buffer("src", torch.tensor([0, 1, 2, 3, 4, 5, 0, 2, 4, 1, 3]))
        self.register_buffer("dst", torch.tensor([1, 0, 1, 2, 2, 2, 3, 3, 0, 4, 4]))   # node 5 gets none

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.message(x)[self.src]
        idx = self.dst.unsqueeze(-1).expand(-1, x.shape[1])
        agg = torch.zeros_like(x).scatter_reduce(0, idx, m, self.reduce, include_self=False)
        return agg + x


class NormalLogSf(nn.Module):
    def __init__(self, gain: float) -> None:
        super().__init__()
        self.gain = gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.gain * (1.0 + torch.tanh(x))        # in (0, 2 gain): torch's value stays finite
        return torch.log(0.5 * torch.erfc(z / math.sqrt(2.0))) * 0.01 + x


class MillsRatio(nn.Module):
    def __init__(self, gain: float) -> None:
        super().__init__()
        self.gain = gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.abs() * self.gain
        return 0.01 / torch.special.erfcx(z) + x


class ErfcRatio(nn.Module):
    def __init__(self, gain: float) -> None:
        super().__init__()
        self.gain = gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.gain * (1.0 + torch.tanh(x))        # in (0, 2 gain): erfc(z) stays a normal float
        return torch.special.erfc(z + 0.5) / torch.special.erfc(z) * x


def gnn_mean() -> nn.Module: return _deep(GnnMean)                                   # noqa: E704
def gnn_amax() -> nn.Module: return _deep(lambda: GnnMean("amax"))                   # noqa: E704
def normal_logsf() -> nn.Module: return _deep(lambda: NormalLogSf(6.0))              # noqa: E704
def normal_logsf_small() -> nn.Module: return _deep(lambda: NormalLogSf(0.8))        # noqa: E704
def mills_ratio() -> nn.Module: return _deep(lambda: MillsRatio(20.0))               # noqa: E704
def mills_ratio_small() -> nn.Module: return _deep(lambda: MillsRatio(0.3))          # noqa: E704
def erfc_ratio() -> nn.Module: return _shallow(lambda: ErfcRatio(4.2))               # noqa: E704
def erfc_ratio_small() -> nn.Module: return _shallow(lambda: ErfcRatio(0.5))         # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
