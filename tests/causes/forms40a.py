"""Upstream drift forms found for issue 30 point 8 in session 29 (tests/causes/forms40a.py), in the families the
earlier suites did not touch (indexing/scatter, sorting/selection, sampling geometry, padding, casts, rounding).
Screened with torch 2.13 / ONNX Runtime 1.32 and both exporters: index_put / index_add / scatter_reduce /
take_along_dim / gather with negative or duplicate indices, topk / sort / argsort / argmax ties, kthvalue /
median / mode / unique, grid_sample (every mode, padding and align_corners, 4-D and 5-D, far outside the image),
affine_grid, interpolate bicubic / nearest-exact / area / size 1, pixel_shuffle, unfold / fold, F.pad reflect /
replicate / circular, float -> uint8 / int8 / int16 / int32 casts out of range, NaN / inf -> int, bool casts,
round half / decimals, trunc / fix: all of them either match, refuse to export, or are forms the earlier suites
have (duplicate-index accumulation, topk ties, the truncating float floor_divide).  What still drifts:

* ``roll_cycle`` / ``roll_grid``: ``torch.roll`` by a shift past the dimension's length (a cyclic shift whose
  size is a hyperparameter; a Swin-style window shift on a small grid).  torch takes the shift modulo the length;
  the TorchScript exporter's lowering (pytorch/pytorch#58389) slices at ``-shift`` and leans on ``Slice``'s
  clamping, which only holds inside one wrap: the file returns the tensor unshifted.  The dynamo lowering had
  the same flaw (microsoft/onnxscript#3024, fixed): its file is right;
* ``aa_scale`` / ``aa_cubic_scale`` / ``aa_up_scale``: ``F.interpolate(..., scale_factor=s, antialias=True)``
  with a scale whose output size is not exact (0.4 of 16, 1.7 of 16): torch samples at ``1 / s``, the dynamo
  lowering of ``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa`` gives ``Resize`` the output *sizes*, so
  ONNX Runtime samples at ``in / out`` (microsoft/onnxscript#2916 left it as an xfail: "output mismatch when
  scales are provided"; pytorch/pytorch#183546).  The non-antialiased lowering passes scales and is right;
* ``aa_corners``: ``F.interpolate(..., size=..., antialias=True, align_corners=True)``: torch's antialiased
  kernel keeps half-pixel centres and only stretches its scale to ``(in - 1) / (out - 1)``; the dynamo file's
  ``Resize`` maps the corners (``align_corners``), which no antialiased Resize computes as torch does
  (microsoft/onnxscript#2916's other xfail: "align_corners=True diverges between PyTorch AA kernel and ONNX Resize
  antialias");
* clean controls: ``roll_cycle_short`` (a shift inside the length), ``aa_half`` (an exact 0.5 scale),
  ``bilinear_up`` (1.7 without antialias).

The deep row forms sit after forms30's 16-call stem and before a head, the shallow ones after one Linear; the deep
image forms after a 16-call convolution stem (``DeepCNN``) and before a 1x1 convolution head, the shallow image
form after one convolution.  The form is always the child ``body``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
CHANNELS = 4


class RollCycle(nn.Module):
    """a cyclic shift of the features by ``shift`` (past the row's 32 when long), mixed back in."""

    def __init__(self, shift: int) -> None:
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.5 * torch.roll(x, self.shift, 1)


class RollGrid(nn.Module):
    """a Swin-style window shift of the features seen as a 4 x 8 grid, by (-5, 10): past both lengths."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = x.view(x.shape[0], 4, 8)
        return x + torch.roll(g, (-5, 10), (1, 2)).reshape(x.shape[0], WIDTH)


class Resample(nn.Module):
    """``F.interpolate`` of the feature map with the given keywords."""

    def __init__(self, **kw) -> None:
        super().__init__()
        self.kw = kw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, **self.kw)


class DeepCNN(nn.Module):
    """a 16-call convolution stem (8 x Conv + ReLU) -> body (the form) -> a 1x1 convolution head."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        layers = [nn.Conv2d(3, CHANNELS, 3, padding=1), nn.ReLU()]
        for _ in range(7):
            layers += [nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1), nn.ReLU()]
        self.stem = nn.Sequential(*layers)
        self.body = body
        self.head = nn.Conv2d(CHANNELS, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(x) * 3.0))


class ShallowCNN(nn.Module):
    """one convolution, then the form."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, CHANNELS, 3, padding=1)
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def _cnn(kind, **kw) -> nn.Module:
    torch.manual_seed(0)
    return kind(Resample(**kw)).eval()


def roll_cycle() -> nn.Module: return _deep(lambda: RollCycle(40))                        # noqa: E704
def roll_cycle_short() -> nn.Module: return _deep(lambda: RollCycle(7))                   # noqa: E704
def roll_grid() -> nn.Module: return _shallow(RollGrid)                                    # noqa: E704
def aa_scale() -> nn.Module: return _cnn(DeepCNN, scale_factor=0.4, mode="bilinear", antialias=True)  # noqa: E704
def aa_cubic_scale() -> nn.Module: return _cnn(ShallowCNN, scale_factor=0.4, mode="bicubic", antialias=True)  # noqa
def aa_up_scale() -> nn.Module: return _cnn(DeepCNN, scale_factor=1.7, mode="bilinear", antialias=True)  # noqa: E704
def aa_corners() -> nn.Module:                                                             # noqa: E704
    return _cnn(DeepCNN, size=(6, 6), mode="bilinear", antialias=True, align_corners=True)
def aa_half() -> nn.Module: return _cnn(DeepCNN, scale_factor=0.5, mode="bilinear", antialias=True)  # noqa: E704
def bilinear_up() -> nn.Module: return _cnn(DeepCNN, scale_factor=1.7, mode="bilinear")  # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


def image_inputs() -> torch.Tensor:
    return torch.randn(2, 3, 16, 16)


# --- held out: written after propose/edits/resize_map.py, never tuned on

class RollSeq(nn.Module):
    """held out: the features as 4 channels of 8 steps, each channel's steps shifted back by 19 (past 8)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.view(x.shape[0], 4, 8)
        return x - 0.3 * torch.roll(s, -19, -1).reshape(x.shape[0], WIDTH)


def roll_seq() -> nn.Module: return _deep(RollSeq)                                        # noqa: E704
def aa_aniso() -> nn.Module:                                                              # noqa: E704
    return _cnn(DeepCNN, scale_factor=(0.45, 0.7), mode="bilinear", antialias=True)
def aa_cubic_corners() -> nn.Module:                                                      # noqa: E704
    return _cnn(ShallowCNN, size=(7, 5), mode="bicubic", antialias=True, align_corners=True)
