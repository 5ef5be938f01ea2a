"""Held-out batch E for issue 30 point 8 (session 30): **shape- and data-dependent tracing**, what an export
freezes from the example input that differs on other samples.  Screened standalone with torch 2.13 / ONNX
Runtime 1.32 and both exporters, each exported on one example and run on five samples of other values (and, with
a dynamic dim declared, other lengths):

* Python values taken from tensors (``.item()``, ``.tolist()``, ``float(t)``, a ``numpy()`` round trip): the
  TorchScript trace records them as constants (the ``TracerWarning`` of huggingface/transformers#17773,
  onnx/onnx#2836, pytorch/pytorch#107591: "this value will be treated as a constant in the future"): drifts of
  5e-2 .. 1 on every other sample.  The dynamo exporter computes them in the graph (an unbacked symbol or a
  tensor op): exact.
* Python control flow on tensor values (``if x.abs().max() > t:``, ``if x.mean() > 0:``, a loop whose count is
  ``int(x.abs().sum()) % 3 + 1``; pytorch/pytorch#87550's "Iterating over a tensor ... silently give incorrect
  results"): the TorchScript file keeps the branch (or the count) of the example and drifts only on the samples
  that take the other one; the dynamo exporter refuses them (``torch.export``: data-dependent control flow).
  ``torch.jit.script`` of the same module exports an ``If`` that is exact; the scripted loop does not load in ONNX
  Runtime.  ``torch.cond`` exports (dynamo) and is exact; TorchScript refuses it.
* sizes turned into Python numbers with a dynamic dim declared (``dynamic_axes`` / ``dynamic_shapes``), run at
  other lengths: ``float(x.shape[1]) ** -0.5``, ``math.sqrt(x.size(1))``, ``/ int(x.shape[1])`` are baked into the
  TorchScript file (pytorch/pytorch#99613, #99701, #110801, #117209, #122321; Comfy-Org/ComfyUI#5490, NVlabs/
  FasterViT#12): a silent drift at every other length.  The dynamo exporter specialises the dim instead (a
  static input: ONNX Runtime refuses other lengths, an error, not a drift).  A branch on a size
  (``if x.shape[1] > 12:``) drifts with **both** exporters: the dynamo file keeps the example's branch for a dim
  it declares dynamic.
* these agree at every length: ``x.size(1)`` kept as a tensor in arithmetic, ``torch.arange(x.shape[1])``, a
  positional table sliced by length, ``view(b * 4, t, c // 4)``, ``torch.linspace`` (TorchScript; dynamo
  specialises it), ``nonzero``, one-argument ``torch.where``, ``repeat_interleave`` with tensor repeats.  Without a
  dynamic dim declared, a file runs only at its export shape: ONNX Runtime refuses the others (an error).

Kept (``rows_inputs``: rows of a random scale per sample; ``seq_inputs``: one sequence of a random length per
sample; the export example is drawn after the model, so it is none of the samples):

* ``item_norm`` (deep; TorchScript): ``(x - x.mean().item()) / x.std().item()``;
* ``numpy_center`` (shallow; TorchScript): ``x - torch.from_numpy(x.numpy().mean(0))``;
* ``branch_clip`` (deep; TorchScript): ``if x.abs().max() > 5: x = x * (5 / x.abs().max())``;
* ``len_scale`` (deep; TorchScript, dynamic length): ``x * float(x.shape[1]) ** -0.5``;
* ``len_mean`` (shallow; TorchScript, dynamic length): ``x + x.sum(1) / int(x.shape[1])``;
* ``len_branch`` (deep; both exporters, dynamic length): ``if x.shape[1] > 12:`` a window's mean, else a scale.

Held out (written after the mechanisms): ``held_tolist`` (deep; ``.tolist()`` min-max scaling), ``held_sqrt_len``
(shallow; ``x / math.sqrt(x.size(1))``, dynamic length), ``held_sign`` (deep; ``if x.mean() > 0.5:``), TorchScript.

Clean controls: ``item_norm`` dynamo, ``size_mean`` (``/ x.size(1)``, TorchScript, dynamic length), ``pos_table``
(a positional table sliced by length, dynamo, dynamic length), ``cond_scale`` (``torch.cond``, dynamo).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from tests.causes.forms30 import Shallow

DYNAMIC = {"len_scale", "len_mean", "len_branch", "size_mean", "pos_table", "held_sqrt_len"}  # a dynamic dim 1


class Block(nn.Module):
    """a residual block ``x + 0.5 * GELU(Linear(x))`` (three module calls): the values reach the form."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.lin, self.act = nn.Linear(width, width), nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.5 * self.act(self.lin(x))


class DeepRes(nn.Module):
    """a residual stem (6 blocks, 18 calls) -> body (the form) -> a Linear head: the drift starts at body.
    (forms30's ``Deep`` stem maps every input to the same values: a value- or length-dependent form needs its
    input to carry the sample.)"""

    def __init__(self, body: nn.Module, width: int = 32) -> None:
        super().__init__()
        self.stem = nn.Sequential(*[Block(width) for _ in range(6)])
        self.body = body
        self.head = nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(x)))


class ItemNorm(nn.Module):
    """standardise by Python floats taken from the tensor (``.item()``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean().item()) / x.std().item()


class NumpyCenter(nn.Module):
    """subtract the column means computed in numpy (a round trip through ``.numpy()``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - torch.from_numpy(x.detach().numpy().mean(0, keepdims=True))


class BranchClip(nn.Module):
    """rescale an activation whose peak passes a bound (a Python ``if`` on a tensor value)."""

    def __init__(self, bound: float = 5.0) -> None:
        super().__init__()
        self.bound = bound

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        peak = x.abs().max()
        if peak > self.bound:
            x = x * (self.bound / peak)
        return x


class LenScale(nn.Module):
    """scale by the sequence length taken as a Python float (an attention-style ``T ** -0.5``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * float(x.shape[1]) ** -0.5


class LenMean(nn.Module):
    """add the mean over the sequence, divided by the length as a Python int."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x.sum(1, keepdim=True) / int(x.shape[1])


class SizeMean(nn.Module):
    """the same mean with ``x.size(1)`` left to the trace (a control)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x.sum(1, keepdim=True) / x.size(1)


class LenBranch(nn.Module):
    """a long sequence gets its first window's mean added; a short one is scaled (a Python ``if`` on a size)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > 12:
            return x + x[:, :12].mean(1, keepdim=True)
        return x * 1.5


class PosTable(nn.Module):
    """a learned positional table sliced by the length (a control)."""

    def __init__(self, width: int = 32, most: int = 64) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(most, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table[: x.shape[1]]


class CondScale(nn.Module):
    """``torch.cond`` on a tensor value (a control: the dynamo file keeps both branches)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.mean() > 0, lambda t: t * 2.0, lambda t: t - 1.0, (x,))


def seeded_deep(make) -> nn.Module:
    torch.manual_seed(0)
    return DeepRes(make()).eval()


def seeded_shallow(make) -> nn.Module:
    torch.manual_seed(0)
    return Shallow(make()).eval()


class HeldToList(nn.Module):
    """min-max scaling by Python floats (``.tolist()``): held out, written after the mechanisms."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lo, hi = torch.stack([x.min(), x.max()]).tolist()
        return (x - lo) / (hi - lo)


class HeldSqrtLen(nn.Module):
    """``x / math.sqrt(x.size(1))`` (held out)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / math.sqrt(x.size(1))


class HeldSign(nn.Module):
    """a Python ``if`` on the sign of the mean (held out)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0.5:
            return torch.relu(x)
        return x * 0.5


def item_norm() -> nn.Module: return seeded_deep(ItemNorm)                    # noqa: E704
def numpy_center() -> nn.Module: return seeded_shallow(NumpyCenter)           # noqa: E704
def branch_clip() -> nn.Module: return seeded_deep(BranchClip)                # noqa: E704
def len_scale() -> nn.Module: return seeded_deep(LenScale)                    # noqa: E704
def len_mean() -> nn.Module: return seeded_shallow(LenMean)                   # noqa: E704
def len_branch() -> nn.Module: return seeded_deep(LenBranch)                  # noqa: E704
def size_mean() -> nn.Module: return seeded_deep(SizeMean)                    # noqa: E704
def pos_table() -> nn.Module: return seeded_deep(PosTable)                    # noqa: E704
def cond_scale() -> nn.Module: return seeded_deep(CondScale)                  # noqa: E704


def held_tolist() -> nn.Module: return seeded_deep(HeldToList)               # noqa: E704
def held_sqrt_len() -> nn.Module: return seeded_shallow(HeldSqrtLen)         # noqa: E704
def held_sign() -> nn.Module: return seeded_deep(HeldSign)                    # noqa: E704


def rows_inputs() -> torch.Tensor:
    """six rows of width 32 at a random scale (0.3 .. 3): the values a frozen constant or branch depends on."""
    return torch.randn(6, 32) * float(torch.empty(()).uniform_(0.3, 3.0))


def seq_inputs() -> torch.Tensor:
    """one sequence of width 32 and a random length (6 .. 23)."""
    return torch.randn(1, int(torch.randint(6, 24, ())), 32)


def export_kwargs(model: str, exporter: str) -> dict:
    """What ``torch.onnx.export`` is given for ``model``: a dynamic dim 1 (the length) for the shape forms."""
    if model not in DYNAMIC:
        return {}
    if exporter == "dynamo":
        return {"dynamic_shapes": ({1: torch.export.Dim("length", min=2, max=64)},)}
    return {"input_names": ["x"], "dynamic_axes": {"x": {1: "length"}}}

