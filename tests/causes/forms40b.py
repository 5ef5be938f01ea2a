"""Upstream drift forms found for issue 30 point 8 in session 29 (held-out batch B: normalisation, attention,
recurrent, activation and bfloat16 families), none of them in forms20/30/32-39, forms_special / forms_nan /
forms_dof, upstream.py, real.py, benchmarks/causes_forms.py or the catalogue.  Each still reproduces with torch
2.13 / ONNX Runtime 1.32 (``test_forms40b.py`` says with which exporter).  The deep ones sit after forms30's
16-call stem (or a 12-call conv stem) and before a head; the form is always the child ``body``:

* ``batch_stats`` / ``tta_cnn``: ``F.batch_norm(x, running_mean, running_var, ..., training=True)`` in a model in
  eval mode (test-time adaptation, AdaBN: normalise by the batch's own statistics; a row MLP and a conv net):
  torch normalises by the batch's mean and variance, both exporters take the call's ``training`` from the export
  mode and normalise by the running statistics (pytorch/pytorch#49229 "training parameter of batch_norm is
  ignored", #52867, microsoft/onnxscript#1791); ``momentum=0`` keeps the buffers as they are;
* ``empty_memory``: ``nn.MultiheadAttention`` cross-attention whose ``key_padding_mask`` pads every key of one
  batch element (an empty memory): torch's attention returns 0 for a query with nothing to attend to
  (``_safe_softmax``, pytorch/pytorch#103749), both exporters' files a softmax over all ``-inf``, NaN
  (microsoft/onnxscript#2479's family, with the opposite sign of forms30's ``sdpa_masked``);
* ``blind_query``: self-attention with a float ``attn_mask`` whose first row is ``-inf`` (a query that may attend
  to nothing), the same softmax over ``-inf`` (pytorch/pytorch#41508's form);
* clean controls: ``running_stats`` (``training=False``), ``partial_memory`` (one key padded),
  ``tracked_instance`` (``InstanceNorm2d(track_running_stats=True)`` in eval, pytorch/pytorch#72057's form, right
  today), ``open_query`` (a causal float mask, no empty row).

Screened and dropped (right today with both exporters, or not exportable / not runnable): LSTM / GRU / RNN
(bidirectional, two layers, ``batch_first``, initial states, no bias, cells, 300 steps, inputs x50), LSTM
``proj_size`` (TorchScript refuses it, the dynamo file fails in ONNX Runtime's LSTM), packed sequences (dynamo
cannot export them), InstanceNorm / BatchNorm 1-D, 3-D and untracked, ``F.normalize`` eps, ``nn.RMSNorm`` /
``F.rms_norm`` (eps None or set; TorchScript cannot export ``aten::rms_norm``), weight_norm and spectral_norm
parametrisations, MultiheadAttention with boolean and float padding masks, ``kdim``/``vdim``, bias_kv, causal
masks and returned weights, SDPA with ``scale=``, ``enable_gqa`` (dynamo; TorchScript refuses it) and
``is_causal`` with T_q != T_k, TransformerDecoderLayer, Hardswish / Hardsigmoid (at +-3 too), ELU / CELU / SELU
alpha, GELU tanh, Softsign, Mish, SiLU, GLU, Tanhshrink.  A model cast to bfloat16 does not run in ONNX Runtime
1.32's CPU provider with either exporter (no bfloat16 kernel for Gemm, MatMul, Add, Mul, Exp, Sigmoid, ReduceMax):
no drift to measure.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class BatchStats(nn.Module):
    """a feature norm that always normalises by the batch's statistics (``training=True``), buffers kept."""

    def __init__(self, training: bool = True) -> None:
        super().__init__()
        self.training_stats = training
        self.register_buffer("running_mean", torch.linspace(-1.0, 1.0, WIDTH))
        self.register_buffer("running_var", torch.linspace(0.5, 2.0, WIDTH))
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, WIDTH))
        self.bias = nn.Parameter(torch.linspace(-0.2, 0.2, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training_stats, momentum=0.0, eps=1e-5)


class TestTimeBN(nn.BatchNorm2d):
    """AdaBN / test-time adaptation: a BatchNorm2d that normalises by the batch, also in eval."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, True, 0.0, self.eps)


class ConvNet(nn.Module):
    """a 12-call conv stem, the body, a conv head and a pool: the drift starts at body."""

    def __init__(self, body: nn.Module, channels: int = 8) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.ReLU(),
                                  *[m for _ in range(5) for m in (nn.Conv2d(channels, channels, 3, padding=1),
                                                                   nn.ReLU())])
        self.body = body
        self.head = nn.Conv2d(channels, 4, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.head(self.body(self.stem(x)))).flatten(1)


def _conv(body) -> nn.Module:
    torch.manual_seed(0)
    net = ConvNet(body())
    with torch.no_grad():
        for m in net.body.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d)) and m.running_mean is not None:
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return net.eval()


class Memory(nn.Module):
    """cross-attention of the sequence to a memory (the sequence reversed), keys padded by ``pad``."""

    def __init__(self, empty: bool) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(WIDTH, 4, batch_first=True)
        pad = torch.zeros(2, 6, dtype=torch.bool)
        if empty:
            pad[1] = True               # the second element's memory is empty: every key padded
        else:
            pad[1, -1] = True
        self.register_buffer("pad", pad)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mem = x.flip(1)
        return x + self.attn(x, mem, mem, key_padding_mask=self.pad, need_weights=False)[0]


class MaskedSelf(nn.Module):
    """self-attention with a float mask; ``blind``: the first query may attend to nothing (a row of -inf)."""

    def __init__(self, blind: bool) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(WIDTH, 4, batch_first=True)
        mask = torch.triu(torch.full((6, 6), float("-inf")), 1)
        if blind:
            mask[0] = float("-inf")
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(x, x, x, attn_mask=self.mask, need_weights=False)[0]


class Decoder(nn.Module):
    """a two-layer ``nn.TransformerDecoder`` over the sequence, its memory the sequence reversed, the memory of
    the second element padded (``empty``: every position; else the last one) by ``memory_key_padding_mask``."""

    def __init__(self, empty: bool) -> None:
        super().__init__()
        layer = nn.TransformerDecoderLayer(WIDTH, 4, 48, dropout=0.0, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, 2)
        pad = torch.zeros(2, 6, dtype=torch.bool)
        pad[1, -1:] = True
        if empty:
            pad[1] = True
        self.register_buffer("pad", pad)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(x, x.flip(1), memory_key_padding_mask=self.pad)


def batch_stats() -> nn.Module: return _deep(BatchStats)                                          # noqa: E704
def running_stats() -> nn.Module: return _deep(lambda: BatchStats(False))                        # noqa: E704
def tta_cnn() -> nn.Module: return _conv(lambda: TestTimeBN(8))                                  # noqa: E704
def tracked_instance() -> nn.Module: return _conv(lambda: nn.InstanceNorm2d(8, affine=True, track_running_stats=True))  # noqa: E704,E501
def empty_memory() -> nn.Module: return _deep(lambda: Memory(True))                               # noqa: E704
def partial_memory() -> nn.Module: return _deep(lambda: Memory(False))                            # noqa: E704
def blind_query() -> nn.Module: return _shallow(lambda: MaskedSelf(True))                        # noqa: E704
def open_query() -> nn.Module: return _shallow(lambda: MaskedSelf(False))                        # noqa: E704


def decoder_empty_memory() -> nn.Module: return _deep(lambda: Decoder(True))                  # noqa: E704
def decoder_memory() -> nn.Module: return _deep(lambda: Decoder(False))                       # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


def seq_inputs() -> torch.Tensor:
    return torch.randn(2, 6, WIDTH)


def image_inputs() -> torch.Tensor:
    return torch.randn(2, 3, 8, 8)
