"""A lowering that types a value otherwise than torch (found in session 29 by screening integer and bit
operations with both exporters, torch 2.13 / ONNX Runtime 1.32; not in any earlier form set).

* ``shift_code``: 6-bit codes shifted into the high bits of a byte, ``(codes_uint8 << 2).float()``, as
  bit-packing code does: the dynamo exporter's torchlib ``aten.__lshift__`` ends in a ``Cast`` to int8, so
  every code past 127 comes back negative (252 -> -4) and the ``.float()`` after it reads the wrapped
  value.  Its family: the int8/uint8 typing of ``BitShift`` (microsoft/onnxruntime#2207, onnx/onnx#2406,
  microsoft/onnxscript#1054's shift overloads).  The TorchScript file is right.
* clean control ``shift_down``: ``codes >> 3`` of uint8 codes: the same int8 Cast, but every value fits int8
  (0..31), so the file computes what torch computes.

The deep forms sit after forms30's 16-call stem and before a head; the shallow one after one Linear; the
form is always the child ``body``.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow
from tests.causes.forms39 import rows_inputs  # noqa: F401 - the suite's inputs


class ShiftCode(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        codes = (x.abs() * 256).clamp(0, 63).to(torch.uint8)
        return x + (codes << 2).float() / 64


class ShiftDown(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        codes = (x.abs() * 1000).clamp(0, 255).to(torch.uint8)
        return x + (codes >> 3).float() / 8


def shift_code() -> nn.Module: return _deep(ShiftCode)                 # noqa: E704
def shift_code_shallow() -> nn.Module: return _shallow(ShiftCode)      # noqa: E704
def shift_down() -> nn.Module: return _deep(ShiftDown)                 # noqa: E704
