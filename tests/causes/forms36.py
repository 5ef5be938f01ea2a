"""Upstream drift forms of nn MODULES and functional layers (normalisations, embeddings, padding, losses,
the Transformer encoder) found for issue 30 point 8 in session 26, none of them in forms20/30/32/33/34,
forms_special / forms_nan / forms_dof, upstream.py, real.py or the catalogue; each still reproduces with
torch 2.13 / ONNX Runtime 1.32 (``test_forms36.py`` says with which exporter).  The deep ones sit after
forms30's 16-call stem and before a head, the shallow ones after one Linear; the form is always the child
``body``:

* ``groupnorm_offset`` / ``instnorm_offset`` / ``layernorm_offset``: ``nn.GroupNorm`` / ``nn.InstanceNorm1d`` /
  ``nn.LayerNorm`` of activations with a large common offset and a small spread (pytorch/pytorch#60582,
  microsoft/onnxruntime#21935, #28463, #20478): ONNX Runtime's normalisation kernels take the variance as
  ``E[x^2] - E[x]^2`` in float32 and lose it to cancellation, torch subtracts the mean first;
* ``embedding_max_norm``: ``nn.Embedding(max_norm=1.0)``: torch renormalises each looked-up row to the
  max norm (pytorch/pytorch#72560, microsoft/onnxscript#1098); the TorchScript file gathers the raw rows;
* ``embbag_max_norm``: the ``nn.EmbeddingBag(mode="mean", max_norm=1.0)`` sibling (pytorch/pytorch#7947);
* ``pad_circular_crop``: ``F.pad(mode="circular")`` with a negative (cropping) pad on one side
  (pytorch/pytorch#86690, #24504): TorchScript's lowering wraps the wrong columns;
* ``poisson_eps``: ``F.poisson_nll_loss(log_input=False)`` of rates that reach 0: torch computes
  ``input - target * log(input + eps)`` (pytorch/pytorch#3336); the dynamo file drops the ``+ eps``
  (inf and NaN where torch is finite);
* ``ce_weight_smooth``: ``F.cross_entropy(weight=w, label_smoothing=0.2)``: the dynamo lowering weighs
  the smoothing term otherwise than torch (forms30's ``ce_smooth`` had no class weights);
* ``encoder_nested``: ``nn.TransformerEncoder(enable_nested_tensor=True)`` in eval with a
  ``src_key_padding_mask`` (pytorch/pytorch#97111, #86120): torch's fast path runs on a nested tensor
  and returns 0 at the padded positions; both exporters trace the padded computation;
* clean controls: ``layernorm_plain`` (no offset), ``embedding_plain`` (a max norm no row reaches),
  ``encoder_unpadded`` (no position padded), ``poisson_positive`` (rates never 0).

Written after the first run, as held-out checks of the mechanisms it led to (not counted in the first run):

* ``encoder_final_norm``: a three-layer GELU encoder with a final ``norm`` whose padding comes from sequence
  lengths, mean-pooled: torch pads back with 0 *before* the norm (so torch has the norm of 0 there);
* ``instnorm2d_offset``, ``groupnorm_offset_wide``: ``InstanceNorm2d`` and a 2-group ``GroupNorm`` of offset values.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class OffsetNorm(nn.Module):
    """a normalisation of ``x * spread + offset``: a large common offset, a small spread."""

    def __init__(self, kind: str, offset: float) -> None:
        super().__init__()
        self.kind, self.offset = kind, offset
        self.norm = {"group": lambda: nn.GroupNorm(4, 8), "instance": lambda: nn.InstanceNorm1d(8, affine=True),
                     "layer": lambda: nn.LayerNorm(WIDTH)}[kind]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x * 0.01 + self.offset if self.offset else x
        if self.kind == "layer":
            return self.norm(t)
        return self.norm(t.view(x.shape[0], 8, 4)).reshape(x.shape)


class MaxNormEmbedding(nn.Module):
    def __init__(self, max_norm: float) -> None:
        super().__init__()
        self.table = nn.Embedding(1000, WIDTH, max_norm=max_norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.table((x[:, 0] * 1e5).long().remainder(1000)) + x


class MaxNormBag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(10, WIDTH, mode="mean", max_norm=1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bag((x[:, :4].abs() * 3).long().clamp(0, 9)) + x


class CircularCrop(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.pad(x.view(x.shape[0], 2, 16), (3, -1), mode="circular")
        return y.reshape(x.shape[0], -1)[:, :WIDTH]


class PoissonRate(nn.Module):
    def __init__(self, floor: float) -> None:
        super().__init__()
        self.floor = floor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rate = torch.relu(x) + self.floor
        target = torch.round(x.flip(0).abs() * 2)
        return F.poisson_nll_loss(rate, target, log_input=False, reduction="none") * 0.1


class WeightedSmoothCE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("weight", torch.rand(WIDTH) + 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = x.argmax(-1).flip(0)
        loss = F.cross_entropy(x, target, weight=self.weight, label_smoothing=0.2, reduction="none")
        return loss.unsqueeze(-1) * x


class NestedEncoder(nn.Module):
    """two encoder layers over 2 sequences of 3 positions, the last position of the second one padded."""

    def __init__(self, padded: bool) -> None:
        super().__init__()
        self.padded = padded
        layer = nn.TransformerEncoderLayer(WIDTH, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = x.view(2, 3, WIDTH)
        mask = seq[..., 0] > 100.0          # no position, but made of the input (never a constant)
        if self.padded:
            pad = torch.zeros(2, 3, dtype=torch.bool)
            pad[1, -1] = True
            mask = mask | pad
        return self.encoder(seq, src_key_padding_mask=mask).reshape(x.shape)


class LengthsEncoder(nn.Module):
    """three GELU layers and a final norm over 2 sequences of lengths 3 and 1, mean-pooled."""

    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(WIDTH, 2, 48, dropout=0.0, batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = x.view(2, 3, WIDTH)
        pad = torch.arange(3).unsqueeze(0) >= torch.tensor([3, 1]).unsqueeze(1)
        pooled = self.encoder(seq, src_key_padding_mask=pad | (seq[..., 0] > 100.0)).mean(1)
        return pooled.repeat(3, 1)


class OffsetNorm2d(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.norm = nn.InstanceNorm2d(2, affine=True) if kind == "instance" else nn.GroupNorm(2, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = (x.shape[0], 2, 4, 4) if self.kind == "instance" else (x.shape[0], 4, 8)
        return self.norm(x.view(shape) * 0.02 + 2000.0).reshape(x.shape)


def groupnorm_offset() -> nn.Module: return _deep(lambda: OffsetNorm("group", 1000.0))         # noqa: E704
def instnorm_offset() -> nn.Module: return _deep(lambda: OffsetNorm("instance", 1000.0))       # noqa: E704
def layernorm_offset() -> nn.Module: return _shallow(lambda: OffsetNorm("layer", 3000.0))      # noqa: E704
def layernorm_plain() -> nn.Module: return _shallow(lambda: OffsetNorm("layer", 0.0))          # noqa: E704
def embedding_max_norm() -> nn.Module: return _deep(lambda: MaxNormEmbedding(1.0))             # noqa: E704
def embedding_plain() -> nn.Module: return _deep(lambda: MaxNormEmbedding(100.0))              # noqa: E704
def embbag_max_norm() -> nn.Module: return _shallow(MaxNormBag)                                # noqa: E704
def pad_circular_crop() -> nn.Module: return _deep(CircularCrop)                               # noqa: E704
def poisson_eps() -> nn.Module: return _deep(lambda: PoissonRate(0.0))                         # noqa: E704
def poisson_positive() -> nn.Module: return _deep(lambda: PoissonRate(0.5))                    # noqa: E704
def ce_weight_smooth() -> nn.Module: return _deep(WeightedSmoothCE)                            # noqa: E704
def encoder_nested() -> nn.Module: return _deep(lambda: NestedEncoder(True))                   # noqa: E704
def encoder_unpadded() -> nn.Module: return _deep(lambda: NestedEncoder(False))                # noqa: E704


def encoder_final_norm() -> nn.Module: return _deep(LengthsEncoder)                         # noqa: E704
def instnorm2d_offset() -> nn.Module: return _shallow(lambda: OffsetNorm2d("instance"))        # noqa: E704
def groupnorm_offset_wide() -> nn.Module: return _deep(lambda: OffsetNorm2d("group"))          # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
