"""Held-out batch 41F for issue 30 point 8 (session 41): a blind first-run measurement from a fresh angle, **the export
options and model states deployers actually use**: ``training=torch.onnx.TrainingMode.TRAINING`` / ``PRESERVE``, a
model left in ``train()`` when the dynamo exporter traces it, ``export_modules_as_functions`` (ONNX local functions),
``keep_initializers_as_inputs``, ``do_constant_folding=False``, ``operator_export_type=ONNX_ATEN_FALLBACK``, dynamo's
``optimize=False``, weight-norm / spectral-norm / orthogonal parametrisations.  Screened standalone with torch 2.13 /
ONNX Runtime 1.32, both exporters, ONNX Runtime at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL`` (about 60 exports,
/tmp/heldF/s1..s3.py), the torch reference always the model in ``eval()`` (drifttui puts the model it loads in eval,
as a deployer's checkpoint is compared):

* these agree: ``keep_initializers_as_inputs=True``, ``do_constant_folding=False`` and ``ONNX_ATEN_FALLBACK`` (the
  same file when every op has a symbolic) on a ``log1p`` / ``remainder`` / ``cdist`` form (they drift exactly as the
  plain file does: the mechanisms held by forms40*; drifttui maps and explains the file with initializers as inputs);
  a ``BatchNorm1d`` model left in ``train()`` exported by the dynamo exporter (the file normalises by the running
  statistics); ``nn.MultiheadAttention(dropout=0.1)`` exported in training mode (TorchScript, both modes; dynamo: no
  dropout in the file); weight_norm (both APIs, both exporters, train or eval); spectral_norm in eval (the
  parametrisation: dynamo; TorchScript cannot export ``aten::vdot``; the old hook API: both);
* not exportable: ``orthogonal`` parametrisations (``matrix_exp``, ``cayley``, ``householder``: ``aten::mH`` /
  ``linalg_householder_product``, both exporters); spectral_norm with ``TrainingMode.TRAINING`` (TorchScript:
  ``_div_rounding_mode``); ``InstanceNorm1d(track_running_stats=True)`` with ``TrainingMode.TRAINING`` exports a
  file ONNX Runtime refuses to load (an error, not a drift).

What drifts, and is kept (no earlier suite holds it: forms40b holds the opposite direction, ``batch_norm(...,
training=True)`` in an eval model whose file normalises by the running statistics; the catalogue says "a BatchNorm
module left in train mode inside an eval model is not a form drifttui can be given"):

* **a file exported in training mode, compared with the eval model** (the deployer's checkpoint):
  ``BatchNorm1d`` exported with ``training=TrainingMode.TRAINING`` (TorchScript: ``BatchNormalization`` with
  ``training_mode=1`` normalises each batch by its own statistics, and the export's own forward moved the running
  statistics the file holds by one momentum step; Samsung/ONE#12087, pytorch/pytorch#52867, microsoft/onnxscript#1791,
  microsoft/onnxruntime#26584); the same with a model left in ``train()`` and ``TrainingMode.PRESERVE``;
  ``InstanceNorm1d(track_running_stats=True)`` in a model left in ``train()`` exported by the dynamo exporter (the
  file normalises each instance by its own statistics where the eval module uses the running ones;
  JDAI-CV/fast-reid#727); a spectral-norm parametrisation (``torch.nn.utils.parametrizations.spectral_norm``) in a
  model left in ``train()`` exported by the dynamo exporter (the file runs one power iteration per call where the eval
  module divides by the sigma of its stored ``u``, ``v``; pytorch/pytorch#8208); attention-probability dropout
  (``nn.Dropout(0.1)`` after a softmax) exported with ``TrainingMode.TRAINING`` (TorchScript) or from a model left in
  ``train()`` (dynamo): ``Dropout`` with ``training_mode`` true draws random masks (at ``ORT_DISABLE_ALL``; ONNX
  Runtime's default level removes the Dropout, so only a runtime that keeps it sees the drift);
* **a file whose modules are ONNX local functions** (``export_modules_as_functions=True``, TorchScript;
  pytorch/pytorch#63589, #84490): the graph is one call node, every value inside the functions, so the drift of a
  held form (``torch.log1p`` lowered to ``Log(1 + x)``) cannot be localised unless the functions are inlined with
  their module scopes.

Kept (``body`` the form, in forms40e's residual stem of 18 calls (deep) or after one Linear (shallow)):

* ``bn_training`` (deep, TorchScript, ``TrainingMode.TRAINING``); ``bn_preserve`` (shallow, TorchScript, ``train()``
  + ``TrainingMode.PRESERVE``); ``inorm_train`` (deep, dynamo, ``train()``); ``snorm_train`` (shallow, dynamo,
  ``train()``); ``attn_dropout`` (deep, TorchScript, ``TrainingMode.TRAINING``); ``attn_dropout_train`` (shallow,
  dynamo, ``train()``); ``log1p_functions`` (deep, TorchScript, ``export_modules_as_functions=True``);
  ``log1p_some_functions`` (shallow, TorchScript, ``export_modules_as_functions={Log1pScaled, nn.Linear}``).

Clean controls: ``bn_eval`` (TorchScript, eval, ``do_constant_folding=False`` + ``keep_initializers_as_inputs=True``),
``clean_functions`` (deep, TorchScript, ``export_modules_as_functions=True``, no drifting op), ``inorm_eval``
(dynamo, ``InstanceNorm1d(track_running_stats=True)`` exported in eval).
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parametrizations

from tests.causes.forms30 import Shallow
from tests.causes.forms40e import DeepRes

WIDTH = 32


def _stats(norm: nn.Module) -> nn.Module:
    """running statistics away from the initial 0 / 1, as a trained model holds."""
    with torch.no_grad():
        norm.running_mean.copy_(torch.linspace(-1.0, 1.0, WIDTH))
        norm.running_var.copy_(torch.linspace(0.5, 2.0, WIDTH))
    return norm


class InstanceStats(nn.Module):
    """an instance norm with tracked statistics over (batch, 32 channels, 32 steps)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = _stats(nn.InstanceNorm1d(WIDTH, track_running_stats=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


class SpectralLinear(nn.Module):
    """a Linear under the spectral-norm parametrisation (a GAN's layers), warmed by a few training steps."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = parametrizations.spectral_norm(nn.Linear(WIDTH, WIDTH))
        with torch.no_grad():
            for _ in range(3):
                self.lin(torch.randn(4, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * 4.0


class AttentionDropout(nn.Module):
    """single-head self-attention whose probabilities go through ``nn.Dropout(0.1)``."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k = nn.Linear(WIDTH, WIDTH), nn.Linear(WIDTH, WIDTH)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = torch.softmax(self.q(x) @ self.k(x).transpose(1, 2) / math.sqrt(WIDTH), -1)
        return self.drop(p) @ x


class Log1pScaled(nn.Module):
    """``log1p`` of a small value, scaled back: the low bits ``Log(1 + x)`` loses (forms40*'s held mechanism)."""

    def __init__(self, scale: float = 1e-5) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(x * self.scale) / self.scale


def _deep(make, train: bool = False) -> nn.Module:
    torch.manual_seed(0)
    model = DeepRes(make())
    return model.train() if train else model.eval()


def _shallow(make, train: bool = False) -> nn.Module:
    torch.manual_seed(0)
    model = Shallow(make())
    return model.train() if train else model.eval()


def bn_training() -> nn.Module: return _deep(lambda: _stats(nn.BatchNorm1d(WIDTH)))               # noqa: E704
def bn_preserve() -> nn.Module: return _shallow(lambda: _stats(nn.BatchNorm1d(WIDTH)), True)      # noqa: E704
def bn_eval() -> nn.Module: return _deep(lambda: _stats(nn.BatchNorm1d(WIDTH)))                   # noqa: E704
def inorm_train() -> nn.Module: return _deep(InstanceStats, True)                                  # noqa: E704
def inorm_eval() -> nn.Module: return _deep(InstanceStats)                                         # noqa: E704
def snorm_train() -> nn.Module: return _shallow(SpectralLinear, True)                              # noqa: E704
def attn_dropout() -> nn.Module: return _deep(AttentionDropout)                                    # noqa: E704
def attn_dropout_train() -> nn.Module: return _shallow(AttentionDropout, True)                     # noqa: E704
def log1p_functions() -> nn.Module: return _deep(Log1pScaled)                                      # noqa: E704
def log1p_some_functions() -> nn.Module: return _shallow(Log1pScaled)                              # noqa: E704
def clean_functions() -> nn.Module: return _deep(lambda: nn.Tanh())                               # noqa: E704


def rows_inputs() -> torch.Tensor: return torch.randn(6, WIDTH)                                    # noqa: E704
def seq_inputs() -> torch.Tensor: return torch.randn(2, 8, WIDTH)                                  # noqa: E704
def channel_inputs() -> torch.Tensor: return torch.randn(2, WIDTH, WIDTH)                          # noqa: E704


INPUTS = {"attn_dropout": "seq_inputs", "attn_dropout_train": "seq_inputs", "inorm_train": "channel_inputs",
          "inorm_eval": "channel_inputs"}


def export_kwargs(model: str, exporter: str) -> dict:
    """What ``torch.onnx.export`` is given besides the model and its inputs: the option the deployer used."""
    mode = torch.onnx.TrainingMode
    return {"bn_training": {"training": mode.TRAINING}, "bn_preserve": {"training": mode.PRESERVE},
            "attn_dropout": {"training": mode.TRAINING},
            "log1p_functions": {"export_modules_as_functions": True},
            "log1p_some_functions": {"export_modules_as_functions": {Log1pScaled, nn.Linear}},
            "clean_functions": {"export_modules_as_functions": True},
            "bn_eval": {"do_constant_folding": False, "keep_initializers_as_inputs": True}}.get(model, {})
