"""Held-out batch U for issue 30 point 8 (session 35): a blind first-run measurement screened from the SOURCES of the
rewrite rules that run on every export or session (not from a family), with torch 2.13 / ONNX Runtime 1.32, both
exporters at their default opset, after grepping every earlier suite (forms*.py and their screened lists,
benchmarks/causes_forms.py, upstream*.py) and batch S's held mechanism (the ``+ eps`` the no-op rules drop).  Written
before the engine ran on any of them (/tmp/heldU/judge.md of session 35): the first run's table is in
test_forms40u.py.  Screening was time-boxed (about 15 minutes, two rounds, 19 exports a round).

Read (onnxscript's default rewrite rules, ``onnxscript/rewriter/__init__.py``'s ``_DEFAULT_REWRITE_RULES``): the
no-op rules (held: forms40s), ``_basic_rules`` (Cast-Cast only for float32 -> float16 / bfloat16 as the outer type, an
exact rewrite; Cast / Expand / Transpose / Reshape identities), ``_min_max_to_clip`` (``Max(Min(x, ub), lb)`` fuses
only when ``lb <= ub``), ``_fuse_pad_into_conv``, ``_fuse_batchnorm`` (ill-conditioned rounding: held, forms40t's
screen), ``_fuse_relus_clips``.

Screened and matching (exact, or within 4e-7), so not kept: ``minimum(maximum(x, -1), 1)`` and ``relu6`` /
``clamp`` / ``relu(x).clamp(max=)`` / ``clamp(min=).clamp(max=)`` / ``hardtanh(relu(x))`` of rows holding NaN (the
fused Clip keeps NaN as torch does), ``clamp(max=-1).clamp(min=0.5)`` (the fused bounds cross but ONNX's Clip takes
the max, which is torch's order here), ``relu(x).clamp(max=-1)``, ``F.pad`` then ``max_pool2d`` of negative
images (zero and -5 pads), ``F.pad`` then ``avg_pool2d`` with and without ``count_include_pad``, ``F.pad`` with a
value of 1 / reflect then a Conv, a zero pad then a padded Conv (dynamo; TorchScript fails to export the Conv's
parameter as a constant in that harness).

What drifts, and is kept (no earlier suite holds it; grep of ``Clip(Clip``, ``successive``, ``crossed`` finds only
forms40s's single ``clamp`` with crossed tensor bounds, which matched): **the dynamo exporter's optimizer fuses two
successive clamps into one Clip whose bounds cross**.  ``_fuse_relus_clips.FuseSuccessiveClip`` rewrites
``Clip(Clip(x, a, b), c, d)`` to ``Clip(x, max(a, c), min(b, d))`` and ``FuseSuccessiveReluClip`` rewrites
``Relu(Clip(x, a, b))`` to ``Clip(x, max(0, a), b)`` with no check that the new lower bound stays under the upper
one; where it does not (the second clamp's range lies above the first's, or the clamp's upper bound is negative
under a ReLU), torch's order gives the second range's lower bound (or 0) and ONNX's Clip (min > max: every value is
max) gives the first one's upper bound.  The TorchScript file keeps two Clips and matches.  The upstream thread on
this class of rewrite: openvinotoolkit/openvino#21509 ("Fix ClampFusion for case when min is greater then max":
"If max is first the result will be min_value, in the opposite case it will be max_value ... unfused ops will
return correct results"); onnxscript's own ``_min_max_to_clip`` carries that check for ``Max(Min)``, its Clip
rules do not.  The forms (the clamp ranges are configuration, as calibrated activation ranges are):
* ``relu6_range`` (deep): a ReLU6 activation, then a calibrated range ``clamp(8, 16)`` that lies above it, added back
  to the features (torch adds 8, the file 6).  Control: ``relu6_range_overlap`` (the range ``clamp(1, 4)``, inside
  ReLU6's).
* ``capped_relu`` (deep): ``relu(x.clamp(-4, cap))`` with a negative cap (-0.5): torch's ReLU gives 0, the fused
  Clip(x, 0, -0.5) gives -0.5.
* ``clamp_chain`` (shallow): ``x.clamp(0, 1).clamp(2, 3)``, the two ranges disjoint: torch 2, the file 1.
* ``act_stack`` (deep, held out after the fix): ``nn.Sequential(nn.Hardtanh(-3, -1), nn.ReLU6())``: torch 0, the
  file -1 (its origin is ``body.act.1``, the fused Clip being ReLU6's output).

The deep forms sit after forms30's 16-call stem and before a head (20 module calls), the shallow one after one
Linear; the form is always the child ``body``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32


class Relu6Range(nn.Module):
    """a ReLU6 activation clamped again to a calibrated range ``(lo, hi)``, added to the features."""

    def __init__(self, lo: float = 8.0, hi: float = 16.0) -> None:
        super().__init__()
        self.lo, self.hi = lo, hi

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.1 * F.relu6(x * 4.0).clamp(self.lo, self.hi)


class CappedRelu(nn.Module):
    """``relu(x.clamp(-4, cap))`` with a configured cap, added to the features."""

    def __init__(self, cap: float = -0.5) -> None:
        super().__init__()
        self.cap = cap

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.relu(x.clamp(-4.0, self.cap))


class ClampChain(nn.Module):
    """two successive clamps with disjoint ranges, added to the features."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x.clamp(0.0, 1.0).clamp(2.0, 3.0)


class ActStack(nn.Module):
    """a stack of activation modules, ``nn.Hardtanh(-3, -1)`` then ``nn.ReLU6()``, added to the features (held out
    after the fix: not in the first run)."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.Sequential(nn.Hardtanh(-3.0, -1.0), nn.ReLU6())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(x)


def relu6_range() -> nn.Module: return _deep(Relu6Range)                                        # noqa: E704
def relu6_range_overlap() -> nn.Module: return _deep(lambda: Relu6Range(1.0, 4.0))              # noqa: E704
def capped_relu() -> nn.Module: return _deep(CappedRelu)                                        # noqa: E704
def act_stack() -> nn.Module: return _deep(ActStack)                                            # noqa: E704
def clamp_chain() -> nn.Module: return _shallow(ClampChain)                                     # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
