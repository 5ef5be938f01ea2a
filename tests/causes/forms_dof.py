"""Held-out drift forms for the degrees-of-freedom definitions of the make_fx re-trace (issue 30 point 2,
session 25), imported by drifttui as ``tests/causes/forms_dof.py:fn``.  None was used to write
``core/model/dof_forms.py`` (written from torch's kernel and forms34's ``var_small_group``, a ``torch.var``
over groups of 2); each still reproduces with torch 2.13 / ONNX Runtime 1.32 (``test_forms_dof.py`` says with
which exporter).  torch divides the squared deviations by ``max(0, N - correction)`` (pytorch/pytorch#109186:
inf once the correction passes N); both exporters divide by ``N - correction`` (a negative variance, NaN
after a square root), and the TorchScript exporter reads a fractional correction as an int.  The form is
always the child ``body``, inside forms30's deep model (16-call stem, the form, a head) or after one Linear:

* ``mvn_window``: a mean-variance normalisation (the MVN layer of microsoft/onnxruntime#1086) over windows
  of 3 with ``torch.std(..., correction=4)``: torch's std is inf and the window 0, the file's NaN;
* ``whiten_var_mean``: ``torch.var_mean`` over two dims of 8 elements with correction 9 (keepdim), then
  ``(g - mean) * rsqrt(var + eps)``;
* ``batch_std_mean``: ``torch.std_mean`` over the batch of 6 with correction 8 (statistics of a batch
  smaller than the correction);
* ``tensor_var_dims``: ``Tensor.var(dim=(0, 1), correction=30)`` over 24 elements, as a gain;
* ``fractional_dof``: ``torch.var(..., correction=0.5)`` over groups of 4 (a fractional correction, which
  torch accepts: microsoft/onnxscript#643): the TorchScript file divides by 4, not 3.5 (finite, 7% off);
* clean controls: the same modules where N > correction (windows of 8 with correction 4, two dims of 4 with correction 1, a batch statistic
  with correction 1, 24 elements with correction 3), ``fractional_dof`` by the dynamo exporter (which
  keeps the 0.5), and ``ln_unbiased_single``: a layer-norm written with ``torch.var(unbiased=True)`` over a
  size-1 dim (its NaN set to 0), where N == correction and the file divides by the same 0 as torch.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class MVN(nn.Module):
    """Mean-variance normalisation over windows of ``window`` features (unbiased by ``correction``)."""

    def __init__(self, window: int, correction: int) -> None:
        super().__init__()
        self.window, self.correction = window, correction
        self.gain = nn.Parameter(torch.linspace(0.5, 1.5, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, w = x.shape[0], self.window
        g = x[:, : WIDTH // w * w].reshape(n, -1, w)
        std = torch.std(g, dim=-1, correction=self.correction, keepdim=True)
        y = ((g - g.mean(-1, keepdim=True)) / (std + 1e-5)).reshape(n, -1)
        return torch.cat([y, x[:, y.shape[1]:]], dim=1) * self.gain + x


class WhitenVarMean(nn.Module):
    def __init__(self, inner: int, correction: int) -> None:
        super().__init__()
        self.inner, self.correction = inner, correction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = x.view(x.shape[0], -1, 2, self.inner)
        var, mean = torch.var_mean(g, dim=(1, 2), correction=self.correction, keepdim=True)
        return ((g - mean) * torch.rsqrt(var + 1e-3)).reshape(x.shape) + x


class BatchStdMean(nn.Module):
    def __init__(self, correction: int) -> None:
        super().__init__()
        self.correction = correction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        std, mean = torch.std_mean(x, 0, correction=self.correction)
        return (x - mean) / (std + 1.0) + mean


class TensorVarDims(nn.Module):
    def __init__(self, correction: int) -> None:
        super().__init__()
        self.correction = correction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = x.view(x.shape[0], 4, 8)
        gain = torch.rsqrt(g.var(dim=(0, 1), correction=self.correction) + 1.0)
        return (g * gain).reshape(x.shape) + x


class FractionalDof(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = x.view(x.shape[0], -1, 4)
        var = torch.var(g, dim=-1, correction=0.5, keepdim=True)
        return ((g - g.mean(-1, keepdim=True)) * torch.rsqrt(var + 1e-5)).reshape(x.shape)


class UnbiasedLayerNorm(nn.Module):
    """A layer-norm over the last dim written with the unbiased variance, its NaN for a single element set to
    0 (``nan_to_num``); here the last dim has size 1, so every variance is torch's 0/0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.unsqueeze(-1)
        var = torch.var(h, dim=-1, unbiased=True, keepdim=True).nan_to_num(0.0)
        return ((h - h.mean(-1, keepdim=True)) / torch.sqrt(var + 1e-5)).squeeze(-1) + x


def mvn_window() -> nn.Module: return _deep(lambda: MVN(3, 4))                          # noqa: E704
def mvn_window_plain() -> nn.Module: return _deep(lambda: MVN(8, 4))                    # noqa: E704
def whiten_var_mean() -> nn.Module: return _deep(lambda: WhitenVarMean(4, 9))           # noqa: E704
def whiten_var_mean_plain() -> nn.Module: return _deep(lambda: WhitenVarMean(8, 1))     # noqa: E704
def batch_std_mean() -> nn.Module: return _shallow(lambda: BatchStdMean(8))             # noqa: E704
def batch_std_mean_plain() -> nn.Module: return _shallow(lambda: BatchStdMean(1))       # noqa: E704
def tensor_var_dims() -> nn.Module: return _shallow(lambda: TensorVarDims(30))          # noqa: E704
def tensor_var_dims_plain() -> nn.Module: return _shallow(lambda: TensorVarDims(3))     # noqa: E704
def fractional_dof() -> nn.Module: return _deep(FractionalDof)                          # noqa: E704
def ln_unbiased_single() -> nn.Module: return _deep(UnbiasedLayerNorm)                  # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
