"""Deep models (a 16-call stem, a unit, a head) in which a module's *input* has no ONNX value of its own or is
paired with the wrong torch tensor (issue 30 point 6, the input side of absorbed_forms.py), imported by drifttui
as ``tests/causes/absorbed_input_forms.py:fn``.  The drifting op is the same as absorbed_forms': TorchScript
truncates ``floor_divide`` (``*_floor``), the dynamo lowering of ``signbit`` misses -0.0 (``*_signbit``).

* ``merged_*``: ``heads`` splits its input into heads, computes the op on them, merges the heads back with
  ``reshape(B, T, C)`` and hands that to ``proj``, a GPT-2 ``Conv1D`` that flattens its input itself
  (``x.view(-1, C)``).  The dynamo exporter's optimiser merges the two Reshapes into one in ``proj``'s
  scope: ``proj``'s input has no ONNX value and ``proj``, fed ``heads``' wrong values, was named.  The
  origin is ``heads``;
* ``positions_*``: ``decoder`` computes position ids from a mask and calls ``positions(mask, ids)`` (OPT's
  learned positional embedding takes both; its nodes read only the ids): the one ONNX value its nodes read
  was paired by shape with the mask, and ``decoder``, its position ids compared with the mask, was named.
  The origin is ``decoder.unit``, the module whose op drifts;
* ``shared_*``: ``self_attention`` calls ``attn(h, h, h)`` on its own op's result: the three same-shaped inputs
  hold one tensor, so ``h`` is paired with ``attn``'s first.  The origin is ``body``;
* ``merged_relu``: ``heads`` with a ReLU: clean with both exporters.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import Deep

WIDTH = 32
ROWS = 6


def _op(how: str, h: torch.Tensor) -> torch.Tensor:
    if how == "floor":
        return torch.floor_divide(h * 3.0, 0.7)
    if how == "signbit":
        return torch.signbit(torch.round(h)).float()
    return torch.relu(h * 3.0)


class Conv1D(nn.Module):
    """GPT-2's projection: flattens its input, ``addmm``, views the result back."""

    def __init__(self, nx: int = WIDTH, nf: int = WIDTH) -> None:
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.1)
        self.bias = nn.Parameter(torch.randn(nf) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size_out = x.size()[:-1] + (self.nf,)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)


class Heads(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.qkv = nn.Linear(WIDTH, WIDTH)
        self.proj = Conv1D()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.qkv(x).view(2, ROWS // 2, 2, WIDTH // 2).transpose(1, 2)
        h = _op(self.how, h)
        return self.proj(h.transpose(1, 2).reshape(2, ROWS // 2, WIDTH))


class Positions(nn.Module):
    """OPT's learned positional embedding: called with the mask and the position ids, reads the ids."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(ROWS + 2, WIDTH) * 0.1)

    def forward(self, mask: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(ids + 2, self.weight)


class Unit(nn.Module):
    """Called with the position ids first, as OPT's attention is (it does not read them): its re-export's graft
    bakes them in (the same in every sample, no value in the file)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return _op(self.how, self.lin(x))


class Decoder(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.positions = Positions()
        self.unit = Unit(how)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = (x[:, 0] > -100.0).to(torch.int64)
        ids = torch.cumsum(mask, 0) * mask - 1
        return self.unit(ids, x + self.positions(mask, ids))


class SelfAttention(nn.Module):
    """``attn(h, h, h)``: one tensor, computed by this module's own op, passed three times (same shape, same
    values): content cannot tell the three apart and need not; ``h`` is ``attn``'s input all the same."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.lin = nn.Linear(WIDTH, WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = _op(self.how, self.lin(x))
        return self.attn(h, h, h, need_weights=False)[0]


def _deep(body: nn.Module) -> nn.Module:
    return Deep(body).eval()


def merged_floor() -> nn.Module: torch.manual_seed(0); return _deep(Heads("floor"))           # noqa: E702, E704
def merged_signbit() -> nn.Module: torch.manual_seed(0); return _deep(Heads("signbit"))       # noqa: E702, E704
def merged_relu() -> nn.Module: torch.manual_seed(0); return _deep(Heads("relu"))             # noqa: E702, E704
def shared_floor() -> nn.Module: torch.manual_seed(0); return _deep(SelfAttention("floor"))     # noqa: E702, E704
def shared_signbit() -> nn.Module: torch.manual_seed(0); return _deep(SelfAttention("signbit"))  # noqa: E702, E704
def positions_floor() -> nn.Module: torch.manual_seed(0); return _deep(Decoder("floor"))      # noqa: E702, E704
def positions_signbit() -> nn.Module: torch.manual_seed(0); return _deep(Decoder("signbit"))  # noqa: E702, E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(ROWS, WIDTH)
