"""Upstream-reported drift forms no catalogue entry covers (issue 30), imported by drifttui as
``tests/causes/forms30.py:fn``.  Each still reproduces with torch 2.13 / ONNX Runtime 1.32; the
deep ones sit after a stem of 16 Linear+GELU calls and before a head (17+ module calls), the origin
is always ``body``:

* ``ce_smooth``: ``F.cross_entropy(..., label_smoothing=0.1, reduction="none")``: the dynamo
  exporter's hand-written lowering mis-weighs the smoothing term (0.17 off at unit logits); the
  TorchScript exporter cannot export it at all; torch's own core ATen decomposition is right;
* ``sdpa_masked``: ``F.scaled_dot_product_attention`` with a boolean mask that masks a whole query
  row (padding; pytorch/pytorch#159973, microsoft/onnxscript#2479): torch (``_safe_softmax``) returns
  zeros there, the dynamo file the uniform average; the TorchScript exporter is right;
* ``shift``: ``>>`` on a signed integer tensor (pytorch/pytorch#191014): the TorchScript exporter
  lowers it to a truncating integer ``Div`` by ``2**n``, off by one for negative values; the
  dynamo exporter emits ``BitShift`` with the sign handled;
* ``logaddexp``: ``torch.logaddexp`` of large arguments, lowered by the dynamo exporter to
  ``Log(Exp(a) + Exp(b))``: inf where torch is finite (a non-finite error: the local error is inf);
* clean control: ``ce_plain`` (cross entropy without smoothing).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

DEPTH = 16      # stem calls: Linear + GELU pairs count as modules of their own


class CE(nn.Module):
    def __init__(self, smoothing: float) -> None:
        super().__init__()
        self.smoothing = smoothing

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = x.argmax(-1).flip(0)
        return F.cross_entropy(x, target, reduction="none", label_smoothing=self.smoothing).unsqueeze(-1) * x


class MaskedAttention(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q = x.view(b, n, 4, d // 4).transpose(1, 2)
        mask = (x[..., :1] > -10).transpose(1, 2).unsqueeze(1).expand(b, 4, n, n).clone()
        mask[:, :, 0, :] = False        # the first query attends to nothing (a padded position)
        y = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        return y.transpose(1, 2).reshape(b, n, d)


class Shift(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x * 100).to(torch.int32) >> 2).to(torch.float32) * 0.01


class LogAddExp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logaddexp(x * 400.0, x.flip(-1) * 400.0) * 0.01


class Deep(nn.Module):
    """stem (DEPTH calls) -> body (the form) -> head: the drift starts at body."""

    def __init__(self, body: nn.Module, width: int = 32) -> None:
        super().__init__()
        self.stem = nn.Sequential(*[m for _ in range(DEPTH // 2) for m in (nn.Linear(width, width), nn.GELU())])
        self.body = body
        self.head = nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(x) * 3.0))


class Shallow(nn.Module):
    """one Linear, then the form: the drift starts at body."""

    def __init__(self, body: nn.Module, width: int = 32) -> None:
        super().__init__()
        self.stem = nn.Linear(width, width)
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def seeded_deep(make) -> nn.Module:
    """``Deep`` around ``make()``, every weight (the form's too) drawn after seeding."""
    torch.manual_seed(0)
    return Deep(make()).eval()


def seeded_shallow(make) -> nn.Module:
    """``Shallow`` around ``make()``, every weight drawn after seeding."""
    torch.manual_seed(0)
    return Shallow(make()).eval()


def _deep(body: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    return Deep(body).eval()


def ce_smooth() -> nn.Module: return _deep(CE(0.1))                    # noqa: E704
def ce_plain() -> nn.Module: return _deep(CE(0.0))                     # noqa: E704
def sdpa_masked() -> nn.Module: return _deep(MaskedAttention())        # noqa: E704
def shift() -> nn.Module: return _deep(Shift())                        # noqa: E704
def logaddexp() -> nn.Module: return _deep(LogAddExp())                # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 32)


def seq_inputs() -> torch.Tensor:
    return torch.randn(2, 6, 32)
