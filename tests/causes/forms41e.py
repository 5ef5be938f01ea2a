"""Held-out batch 41E for issue 30 point 8 (session 40): **dynamic shapes as the exporters capture them**, each file
exported on one example with a dynamic dim declared (``dynamic_axes`` / ``dynamic_shapes``) and run, as a served
model is, at other lengths or image sizes.  Screened standalone with torch 2.13 / ONNX Runtime 1.32, both exporters,
ONNX Runtime at ``ORT_DISABLE_ALL`` (about 45 forms, /tmp/heldE/s1..s8.py of session 40):

* these agree at every size (or the export refuses them, or the dynamo exporter specialises the dim, so ONNX Runtime
  refuses other sizes: an error, not a drift): ``x.flatten(2, 3)`` (pytorch/pytorch#41893, fixed),
  ``torch.tensor(x.shape[1])`` (pytorch/pytorch#26127, fixed), ``F.interpolate(x, size=y.shape[-2:])``, a
  ``scale_factor=1.5`` bilinear / nearest resize, ``repeat_interleave(2)``, ``chunk`` of an odd length (TorchScript),
  ``topk(x.size(1) // 2)``, ``one_hot(..., x.size(1))``, ``torch.eye(x.size(1), c)``, ``repeat(1, x.size(1), 1)``,
  ``x[:, x.size(1) // 2:]``, a pad to a multiple of 8, ``triu`` of a ``full((T, T))`` mask, a KV-cache causal mask
  ``tril(diagonal=S - L)`` (both exporters; TorchScript keeps ``Trilu``'s k an input; the dynamo exporter does not
  unify two dims whose example sizes are equal), ``clamp(max=x.size(1) - 1)`` and ``% x.size(1)`` of an index,
  ``full_like(x, x.size(1))``, ``unfold`` / ``F.unfold``, ``pixel_unshuffle``, ``lp_pool1d``, ``F.pad`` reflect,
  ``avg_pool2d(ceil_mode=True)``, ``adaptive_avg_pool2d(x, 1)``; ``kthvalue``, ``fft.fftshift`` and
  ``diagonal(offset=x.size(1) // 4)`` (TorchScript) do not export;
* drifting by a mechanism the suites hold (not kept): a recurrence unrolled by ``for t in range(x.size(1))``
  (pytorch/vision#2311: the TorchScript file runs the example's number of steps; the frozen size of forms40e's
  ``len_branch``, told by ``frozen_trace.py``), ``x.tensor_split(3, dim=1)`` in a dynamo file (torch's decomposition
  takes the divisible branch of the example: a size branch kept from the example, forms40e's mechanism).

What drifts beyond the held mechanisms (a size of the example frozen into a baked scalar, a reshape target or a
Python branch) is **a size of the example frozen into an int argument the ONNX op holds as an attribute or as a
constant bound**, in a file that declares the dim dynamic:

* **a pooling window taken from the example's size.**  ``F.max_pool1d(h, h.size(2))`` (the TextCNN global max,
  onnx/onnx#3452, pytorch/pytorch#11296, #4166) and ``F.avg_pool1d(h, h.size(2))`` (an SE block's squeeze,
  pytorch/pytorch#39323; HRNet/HRNet-Image-Classification#13 replaced it by ``mean`` for ONNX) are traced by
  TorchScript into ``MaxPool`` / ``AveragePool`` whose ``kernel_shape`` and ``strides`` hold the example's length:
  at any length up to twice it, the file pools the first ``T_example`` steps only (one window, the right shape).  A
  spatial pyramid (SPP-net's ``ceil(T / n)`` windows with padding) bakes every level's window the same way.  The
  dynamo exporter keeps ``aten.adaptive_avg_pool1d`` / ``adaptive_max_pool2d`` on a symbolic size in the exported
  program, and torch's decomposition (the divisible case's ``avg_pool(kernel=T // out)``) lowers it to an
  ``AveragePool`` / ``MaxPool`` with the example's window (pytorch/pytorch#159550 / PR #160401 for inductor's
  lowering of the same op on dynamic sizes): right only at the example's size (TorchScript refuses adaptive pooling of
  a dynamic size: "input size not accessible").
* **a shift taken from the example's size.**  ``torch.roll(x, x.size(1) // 2, 1)`` (USRNet's ``p2o`` centring a
  kernel, pytorch/pytorch#128324): the TorchScript symbolic reads the shift as an int, so the file rolls by the
  example's half length at every length (two ``Slice`` nodes with constant bounds).  The dynamo exporter fails to
  convert a symbolic shift.

Kept (``T`` the length, dim 1, or ``H x W``; each exported at the SHORTEST size of its inputs, ``*_example``, and
run on samples drawn longer, where the file's output keeps torch's shape: a served model fed longer inputs than its
dummy):

* ``text_cnn`` (shallow, TorchScript): Conv1d, ReLU, ``F.max_pool1d(h, h.size(2)).squeeze(2)``, T 32 -> 33 .. 63;
* ``se_gate`` (deep, TorchScript): ``x * sigmoid(W2 relu(W1 avg_pool1d(h, h.size(2))))``, T 32 -> 33 .. 63;
* ``pyramid`` (deep, TorchScript): an SPP-net pyramid of max pools at 1, 2 and 4 bins, T 32 -> 33 .. 39;
* ``segments`` (deep, dynamo): ``F.adaptive_avg_pool1d(h, 4)`` (four segment means), T 64 -> 65 .. 79;
* ``grid_pool`` (shallow, dynamo): Conv2d, ``nn.AdaptiveMaxPool2d((2, 2))``, a Linear head, 16 x 16 -> 17 .. 23;
* ``roll_center`` (deep, TorchScript): ``x + 0.5 * torch.roll(x, x.size(1) // 2, 1)``, T 16 -> 8 .. 40.

Clean controls (the same code with an argument where it does not drift): ``se_adaptive`` (``adaptive_avg_pool1d(h,
1)``, TorchScript: a ``GlobalAveragePool``), ``segments_one`` (``adaptive_avg_pool1d(h, 1)``, dynamo),
``roll_fixed`` (``torch.roll(x, 3, 1)``, TorchScript).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms40e import DeepRes, Shallow

WIDTH = 32


class TextCNN(nn.Module):
    """Kim's text CNN: a convolution over the tokens, the global max over time by ``max_pool1d(h, h.size(2))``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(WIDTH, WIDTH, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.conv(x.transpose(1, 2)))
        return F.max_pool1d(h, h.size(2)).squeeze(2)


class SEGate(nn.Module):
    """a squeeze-and-excitation gate over time: each channel's mean (``avg_pool1d(h, h.size(2))``, or the adaptive
    pool to 1 for the control), two small projections, a sigmoid gate on every step."""

    def __init__(self, adaptive: bool = False) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(8, WIDTH) / math.sqrt(WIDTH))
        self.w2 = nn.Parameter(torch.randn(WIDTH, 8) / math.sqrt(8))
        self.adaptive = adaptive

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.transpose(1, 2)
        s = F.adaptive_avg_pool1d(h, 1) if self.adaptive else F.avg_pool1d(h, h.size(2))
        gate = torch.sigmoid(F.linear(torch.relu(F.linear(s.squeeze(2), self.w1)), self.w2))
        return x * gate.unsqueeze(1) * 2.0


class Pyramid(nn.Module):
    """SPP-net's spatial pyramid pooling over time: ``n`` bins of ``ceil(T / n)`` steps each, centred by padding."""

    def __init__(self, levels: tuple = (1, 2, 4)) -> None:
        super().__init__()
        self.levels = levels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, t = x.transpose(1, 2), x.size(1)
        outs = []
        for n in self.levels:
            k = int(math.ceil(t / n))
            pad = int((k * n - t + 1) / 2)
            outs.append(F.max_pool1d(h, k, stride=k, padding=pad))
        return torch.cat(outs, 2).transpose(1, 2)


class Segments(nn.Module):
    """the mean of each of ``n`` equal segments of the sequence (``adaptive_avg_pool1d``)."""

    def __init__(self, n: int = 4) -> None:
        super().__init__()
        self.n = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool1d(x.transpose(1, 2), self.n).transpose(1, 2) * 2.0


class GridPool(nn.Module):
    """a small image classifier: Conv2d, ReLU, an adaptive max pool to a 2 x 2 grid, a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU()
        self.pool = nn.AdaptiveMaxPool2d((2, 2))
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.act(self.conv(x))).flatten(1))


class RollCenter(nn.Module):
    """a residual with the sequence rolled by half its length (``shift`` fixed for the control)."""

    def __init__(self, shift: int = 0) -> None:
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.shift or x.size(1) // 2
        return x + 0.5 * torch.roll(x, k, 1)


def _deep(make) -> nn.Module:
    torch.manual_seed(0)
    return DeepRes(make()).eval()


def _shallow(make) -> nn.Module:
    torch.manual_seed(0)
    return Shallow(make()).eval()


def text_cnn() -> nn.Module: return _shallow(TextCNN)                                    # noqa: E704
def se_gate() -> nn.Module: return _deep(SEGate)                                         # noqa: E704
def se_adaptive() -> nn.Module: return _deep(lambda: SEGate(adaptive=True))              # noqa: E704
def pyramid() -> nn.Module: return _deep(Pyramid)                                        # noqa: E704
def segments() -> nn.Module: return _deep(Segments)                                      # noqa: E704
def segments_one() -> nn.Module: return _deep(lambda: Segments(1))                       # noqa: E704
def roll_center() -> nn.Module: return _deep(RollCenter)                                 # noqa: E704
def roll_fixed() -> nn.Module: return _deep(lambda: RollCenter(3))                       # noqa: E704


def grid_pool() -> nn.Module:
    torch.manual_seed(0)
    return GridPool().eval()


def _seq(lo: int, hi: int) -> torch.Tensor:
    """two sequences of width 32 and one random length in lo .. hi."""
    return torch.randn(2, int(torch.randint(lo, hi + 1, ())), WIDTH)


def seq32_example() -> torch.Tensor: return torch.randn(2, 32, WIDTH)                    # noqa: E704
def seq32_inputs() -> torch.Tensor: return _seq(33, 63)                                  # noqa: E704
def pyramid_inputs() -> torch.Tensor: return _seq(33, 39)                                # noqa: E704
def seq64_example() -> torch.Tensor: return torch.randn(2, 64, WIDTH)                    # noqa: E704
def seq64_inputs() -> torch.Tensor: return _seq(65, 79)                                  # noqa: E704
def seq16_example() -> torch.Tensor: return torch.randn(2, 16, WIDTH)                    # noqa: E704
def roll_inputs() -> torch.Tensor: return _seq(8, 40)                                    # noqa: E704
def image_example() -> torch.Tensor: return torch.randn(1, 3, 16, 16)                    # noqa: E704


def image_inputs() -> torch.Tensor:
    """one image of 17 .. 23 pixels a side (height and width drawn apart)."""
    h, w = (int(v) for v in torch.randint(17, 24, (2,)))
    return torch.randn(1, 3, h, w)


# model -> (the inputs function its samples come from, the inputs function of its export example)
INPUTS = {"text_cnn": ("seq32_inputs", "seq32_example"), "se_gate": ("seq32_inputs", "seq32_example"),
          "se_adaptive": ("seq32_inputs", "seq32_example"), "pyramid": ("pyramid_inputs", "seq32_example"),
          "segments": ("seq64_inputs", "seq64_example"), "segments_one": ("seq64_inputs", "seq64_example"),
          "grid_pool": ("image_inputs", "image_example"), "roll_center": ("roll_inputs", "seq16_example"),
          "roll_fixed": ("roll_inputs", "seq16_example")}


def export_kwargs(model: str, exporter: str) -> dict:
    """What ``torch.onnx.export`` is given for ``model``: the length (dim 1), or the image's height and width,
    declared dynamic."""
    dims = {2: "height", 3: "width"} if model == "grid_pool" else {1: "length"}
    if exporter == "dynamo":
        return {"dynamic_shapes": ({d: torch.export.Dim(name, min=2, max=4096) for d, name in dims.items()},)}
    return {"input_names": ["x"], "dynamic_axes": {"x": dims}}
