"""Upstream drift forms of the exporters' lowerings of torch ops, found for issue 30 point 8 in session 26
(tests/causes/forms35.py), none of them in forms20/30/32/33/34, forms_special/nan/dof, upstream.py,
real.py or the catalogue; each still reproduces with torch 2.13 / ONNX Runtime 1.32 (``test_forms35.py``
says with which exporter).  The deep ones sit after forms30's 16-call stem and before a head, the shallow
ones after one Linear; the form is always the child ``body``:

* ``avgpool_divisor`` / ``avgpool3d_divisor``: ``F.avg_pool2d`` / ``avg_pool3d`` with ``divisor_override``
  (pytorch/pytorch#105349): both exporters emit an ``AveragePool`` that divides by the window size (the
  TorchScript one used to refuse it; today both drop the override silently).  The functional call: real.py's
  ``divisor`` is the ``nn.AvgPool2d`` module, which the catalogue's rewrite (reading the module's attribute)
  covered, and this one it did not;
* ``masked_add``: ``x.index_put((mask,), v, accumulate=True)``: the TorchScript file is a ``Where`` that
  replaces the masked values by ``v`` instead of adding it (pytorch/pytorch#61034's family; the repeated
  indices of the same call are real.py's ``indexput``, left out here);
* ``cumsum_int32``: ``torch.cumsum`` of an int32 tensor: torch promotes to int64 (pytorch/pytorch#38829's
  rule for reductions), the TorchScript file sums in int32 and casts after (wraps past 2**31);
* ``logsumexp_int``: ``torch.logsumexp`` of an integer tensor: torch promotes to float, the TorchScript
  file reduces in int64 (a truncated result);
* ``mean_int_dtype``: ``torch.mean(int_tensor, dim, dtype=torch.float32)`` (microsoft/onnxscript#3008's
  family): the dynamo file averages in int64 and casts after (truncated) where torch casts first;
* ``resize_uint8``: ``F.interpolate`` of a uint8 image, bilinear: torch rounds each interpolated value,
  ONNX Runtime's ``Resize`` on uint8 does not (one level off);
* clean controls: ``avgpool_plain`` (no override), ``masked_add_never`` (an empty mask),
  ``cumsum_int32_small`` (no overflow), ``resize_uint8_nearest`` (nearest: no rounding).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class AvgPoolDivisor(nn.Module):
    def __init__(self, dims: int, divisor) -> None:
        super().__init__()
        self.dims, self.divisor = dims, divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        if self.dims == 2:
            y = F.avg_pool2d(x.view(n, 2, 4, 4), 3, 1, 1, divisor_override=self.divisor)
        else:
            y = F.avg_pool3d(x.view(n, 1, 4, 2, 4), (3, 1, 3), 1, (1, 0, 1), divisor_override=self.divisor)
        return y.reshape(n, WIDTH)


class MaskedAdd(nn.Module):
    def __init__(self, above: float) -> None:
        super().__init__()
        self.above = above

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.index_put((x > self.above,), torch.tensor(0.5), accumulate=True)


class SegmentSum(nn.Module):
    """rows summed into segments by ``index_put(accumulate=True)`` with repeated indices (real.py's ``indexput``
    at opset 11; here at the exporter's default opset, where ScatterND has a reduction the exporter leaves out)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(x.shape[0]) // 2
        return x + torch.zeros(x.shape[0], WIDTH).index_put((rows,), x, accumulate=True)


class CumsumInt32(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.cumsum((x.abs().clamp(max=2.0) * self.scale).to(torch.int32), -1)
        return c.float() * (0.1 / self.scale) + x


class LogSumExpInt(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp((x * 3.0).long(), -1, keepdim=True) + x


class MeanIntDtype(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean((x * 100.0).long(), -1, dtype=torch.float32, keepdim=True) * 0.1 + x


class ResizeUint8(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        u = (x.abs() * 60.0).clamp(0, 255).to(torch.uint8).view(n, 1, 4, 8)
        y = F.interpolate(u, size=(8, 4), mode=self.mode)
        return y.float().reshape(n, WIDTH) / 60.0 + x


class HeldPool(nn.Module):
    """held out (written after pool_forms.py): a conv, then a ceil_mode pool over an odd image excluding the
    padding, with an override."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        y = F.avg_pool2d(self.conv(x.view(n, 2, 4, 4)), 3, 2, 1, ceil_mode=True, count_include_pad=False,
                         divisor_override=2)
        return torch.cat([y.reshape(n, -1), x[:, 18:]], 1)


class HeldResize(nn.Module):
    """held out (written after resize_forms.py): a uint8 image scaled by a factor, corners aligned or shrunk."""

    def __init__(self, shrink: bool) -> None:
        super().__init__()
        self.shrink = shrink

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        u = (x.abs() * 80.0).clamp(0, 255).to(torch.uint8).view(n, 2, 4, 4)
        if self.shrink:
            y = F.interpolate(u, size=(3, 2), mode="bilinear").float().reshape(n, 12)
        else:
            y = F.interpolate(u, scale_factor=1.5, mode="bilinear", align_corners=True).float().reshape(n, 72)[:, :12]
        return torch.cat([y / 80.0, x[:, 12:]], 1)


def held_pool() -> nn.Module: return _deep(HeldPool)                                        # noqa: E704
def held_resize() -> nn.Module: return _deep(lambda: HeldResize(False))                     # noqa: E704
def held_resize_shrink() -> nn.Module: return _shallow(lambda: HeldResize(True))            # noqa: E704


def avgpool_divisor() -> nn.Module: return _deep(lambda: AvgPoolDivisor(2, 4))              # noqa: E704
def avgpool_divisor_top() -> nn.Module: return _shallow(lambda: AvgPoolDivisor(2, 4))       # noqa: E704
def avgpool3d_divisor() -> nn.Module: return _deep(lambda: AvgPoolDivisor(3, 5))            # noqa: E704
def avgpool_plain() -> nn.Module: return _deep(lambda: AvgPoolDivisor(2, None))             # noqa: E704
def masked_add() -> nn.Module: return _shallow(lambda: MaskedAdd(1.0))                      # noqa: E704
def masked_add_never() -> nn.Module: return _shallow(lambda: MaskedAdd(100.0))              # noqa: E704
def segment_sum() -> nn.Module: return _deep(SegmentSum)                                     # noqa: E704
def cumsum_int32() -> nn.Module: return _deep(lambda: CumsumInt32(1e9))                     # noqa: E704
def cumsum_int32_small() -> nn.Module: return _deep(lambda: CumsumInt32(1e5))               # noqa: E704
def logsumexp_int() -> nn.Module: return _shallow(LogSumExpInt)                             # noqa: E704
def mean_int_dtype() -> nn.Module: return _deep(MeanIntDtype)                               # noqa: E704
def resize_uint8() -> nn.Module: return _shallow(lambda: ResizeUint8("bilinear"))           # noqa: E704
def resize_uint8_deep() -> nn.Module: return _deep(lambda: ResizeUint8("bilinear"))         # noqa: E704
def resize_uint8_nearest() -> nn.Module: return _deep(lambda: ResizeUint8("nearest"))       # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
