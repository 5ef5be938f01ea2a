"""Drift forms that the real exporters and ONNX Runtime make (issue 20), imported by drifttui as
``tests/causes/real.py:fn``.  Each model is a Linear/Conv stem and one child module holding the
form, so the drift origin is that child:

* ``floordiv``: a float ``floor_divide`` (TorchScript: Div + Cast to int64, truncating);
* ``softplus``: ``nn.Softplus(threshold=0.5)`` (ONNX Softplus has no threshold);
* ``scatter``: ``scatter_add`` with duplicate indices (TorchScript at opset 11: no reduction);
* ``indexput``: ``index_put(accumulate=True)`` with duplicate indices (opset 11: ScatterND);
* ``logsig``: ``log(sigmoid(x))`` on large negative inputs (ORT's Sigmoid returns 0 / is imprecise
  in the tail where the reference implementation is right: a runtime deviation);
* ``divisor``: ``AvgPool2d(divisor_override=3)`` (the exporters drop the divisor);
* ``antialias``: a downsampling ``F.interpolate(antialias=True)`` (a file without antialias);
* ``bilinear``: ``F.interpolate(bilinear)`` exported at opset 10 (asymmetric only);
* ``topk``: ``topk`` on rounded values (ties: the order is implementation-defined);
* ``decoder``: the origin's output is produced by a child module (a head Conv).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class FD(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.floor_divide(x * 3.0, 0.7)


class SA(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.tensor([[0, 1, 0, 2, 1, 0, 3, 3]]).expand(x.shape[0], 8)
        return torch.zeros(x.shape[0], 4).scatter_add(1, idx, x)


class IP(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.tensor([0, 1, 0, 2, 1, 0, 3, 3])
        return torch.zeros(4, x.shape[1]).index_put((idx,), x, accumulate=True)


class LS(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(torch.sigmoid(x))


class AA(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)


class Up(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


class Tk(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.topk(torch.round(x), 3, dim=1).indices.float()


class Stem(nn.Module):
    """A Linear (vectors) or Conv (images) stem, then ``body``; ``gain`` widens the stem's range."""

    def __init__(self, body: nn.Module, image: bool = False, gain: float = 1.0) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1) if image else nn.Linear(8, 8)
        self.gain = gain
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        return self.body(h * self.gain if self.gain != 1.0 else h)


class Decoder(nn.Module):
    """A decoder whose output is its child ``head``'s: the origin is ``dec``, its output value the
    head Conv's."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False))


class WithDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.dec = Decoder()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dec(self.stem(x))


def _build(body: nn.Module, **kw) -> nn.Module:
    torch.manual_seed(0)
    return Stem(body, **kw).eval()


def floordiv() -> nn.Module: return _build(FD())                                  # noqa: E704
def softplus() -> nn.Module: return _build(nn.Softplus(beta=1.0, threshold=0.5))  # noqa: E704
def scatter() -> nn.Module: return _build(SA())                                   # noqa: E704
def indexput() -> nn.Module: return _build(IP())                                  # noqa: E704
def logsig() -> nn.Module: return _build(LS(), gain=40.0)                         # noqa: E704
def divisor() -> nn.Module: return _build(nn.AvgPool2d(2, divisor_override=3), image=True)  # noqa: E704
def antialias() -> nn.Module: return _build(AA(), image=True)                     # noqa: E704
def bilinear() -> nn.Module: return _build(Up(), image=True)                      # noqa: E704
def topk() -> nn.Module: return _build(Tk())                                      # noqa: E704


def decoder() -> nn.Module:
    torch.manual_seed(0)
    return WithDecoder().eval()


# drifttui seeds torch before each sample (seed S+i): the inputs use the global generator
def vec_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(2, 8),)


def rows_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(8, 8),)


def img_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(1, 3, 16, 16),)


class CosPair(nn.Module):
    """``CosineSimilarity(eps=0.5)`` of a vector and a scaled copy: the exporters place the large
    eps differently (TorchScript clamps the product of the norms, torch each norm)."""

    def __init__(self) -> None:
        super().__init__()
        self.cos = nn.CosineSimilarity(dim=1, eps=0.5)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.cos(y, y * 0.1 + 0.01)


def cosine() -> nn.Module: return _build(CosPair())                               # noqa: E704


class FloorT(nn.Module):
    """A float floor_divide whose output is transposed: TorchScript folds the ``.t()`` into the
    consumer's Gemm (transA), so this module has no output value of its own (unmapped)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.floor_divide(self.lin(x) * 3.0, 0.7).t()


class Folded(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = FloorT()
        self.b = nn.Linear(4, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def folded() -> nn.Module:
    torch.manual_seed(0)
    return Folded().eval()


def cols_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(4, 8),)
