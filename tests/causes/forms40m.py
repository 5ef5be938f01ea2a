"""Held-out batch M for issue 30 point 8 (session 32): a blind first-run measurement from a fresh angle, ONNX Runtime
kernel deviations and exporter lowerings reported in microsoft/onnxruntime, pytorch/pytorch and microsoft/onnxscript
threads, screened with torch 2.13 / ONNX Runtime 1.32, both exporters at their default opset, on (6, 32) rows, after
grepping every earlier suite (forms*.py and their screened lists, fx_forms, drifted, real, upstream,
test_upstream_drifts, benchmarks/causes_forms.py).  Written before the engine ran on any of them
(/tmp/heldM/judge.md of session 32): the first run's table is in test_forms40m.py.  Screening was time-boxed (25
minutes, nine rounds): almost every kernel deviation the threads report is fixed in ONNX Runtime 1.32 or is a form
the suites hold.

Screened and matching (exact, or within 2e-7 relative), so not kept:
* kernels reported as deviating, fixed by ONNX Runtime 1.32: ``Erf`` of NaN (microsoft/onnxruntime#28462: now NaN),
  ``Cast`` int32 -> bool fused into float -> bool (#11994, #18212: a duplicated ``.to(int32)`` with a bool and an
  int consumer, int8 / uint8 too), ``Max`` / ``Clip`` of NaN with a one-element bound (#21455, onnx/onnx#6003),
  ``Softplus`` / ``Exp`` of -80 .. -110 (subnormal results kept), ``TopK`` of NaN (NaN ranked largest, as torch;
  only the order among NaNs differs: ties), ``ReduceLogSumExp`` of 200x rows, ``Einsum`` of a bilinear form,
  ``ReduceL2`` of 1e-23 rows;
* arithmetic: ``sinh`` / ``cosh - 1`` / ``asinh`` / ``tanh`` of 1e-5 (dynamo; TorchScript refuses the first
  three), ``lerp`` with tensor weights (near 0, 1 and 0.999, across a level of 1e4), float ``var`` of a level of
  3000, int32 -> float16, float -> int32 -> float, float16 -> int32, float16 ``matmul`` over 2048 (1e-4, within the
  float16 budget), float16 SDPA (1.5e-4, within it), ``nn.RMSNorm`` with ``eps=None`` of 1e-4 activations
  (dynamo; TorchScript cannot export it);
* distance and loss: ``cdist(compute_mode="donot_use_mm_for_euclid_dist")`` of 30 rows (TorchScript; dynamo fails),
  ``vector_norm(ord=0)`` / ``ord=0.5``, k-NN by ``topk(largest=False)`` of clamped matrix-product distances,
  ``cross_entropy`` / ``nll_loss`` whose every target is ignored (with and without class weights: NaN on both
  sides), ``poisson_nll_loss(full=True)``, ``triplet_margin_loss(swap=True)``, ``binary_cross_entropy`` of
  saturated probabilities (dynamo; TorchScript refuses the last three);
* attention masking: SDPA ``is_causal`` with 3 queries against 6 keys, ``nn.MultiheadAttention`` with a padding
  mask (dynamo), ``triu`` / ``tril`` with a diagonal past the size;
* drifting, but a form the suites hold (not kept): ``amax`` / ``argmax`` of NaN rows (forms_nan, forms32/33),
  ``argsort`` / ``topk`` with NaN or duplicate rows (ties: real.py, upstream.py), ``sign`` of NaN (forms33),
  ``log(sigmoid(.))`` of -60 (ONNX Runtime's Sigmoid tail, real.py), ``elu`` of 1e-5 (forms40i),
  ``expm1`` as ``Exp - 1`` (dynamo; fx_forms), ``remainder`` on multiples (forms34), ``cdist(compute_mode=
  "use_mm_for_euclid_dist")`` (forms40g), the float32 ``cumsum`` accumulated in double (forms39), float16 row
  sums and running sums (forms39), ``std_mean`` of a level of 5000 (forms36's offset statistics), k-NN over the
  square root of matrix-product distances (the cancellation, forms40f/l, and ties).

Kept (each drifts over drifttui's default tolerance with both exporters; the two drifting forms in deep models, 20
module calls):
* ``voxel_cells`` (integer conversion): points on a 0.05 grid binned into cells, ``(p // 0.05).long()``, the cell's
  embedding looked up (a voxel / bucket index).  torch's float ``floor_divide`` (``c10::div_floor_floating``, the
  Python semantics of pytorch/pytorch#43874 / #78116) computes ``(a - fmod(a, b)) / b`` and floors it, so a point
  a hair below a cell boundary stays in the lower cell; both lowerings compute ``Floor(a / b)`` (TorchScript through
  a truncating Cast, equal to Floor on these non-negative values; dynamo: torchlib's ``aten_floor_divide``), and
  the quotient rounded to float32 lands on the integer: the next cell, another embedding row.  The sibling of
  forms34's ``remainder_phase`` (``remainder`` on multiples), here in ``//`` itself.  Control: ``voxel_cells_off``
  (points off the grid).
* ``frame_ends`` (cumulative, into a length mask): a TTS length regulator's frame ends, ``cumsum(durations) //
  hop`` with durations in quarter seconds (exact in float32) and a hop of 0.05 s, then ``arange(T) < ends`` (the
  frames each segment covers, summed): the same ``floor_divide``, off by one frame at the segment ends.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep

WIDTH = 32
CELLS = 64
FRAMES = 64


class VoxelCells(nn.Module):
    """points (the features on a 0.05 grid, or off it) binned into cells, ``(p // size).long()``, each cell's
    embedding added (a voxel / bucket index)."""

    def __init__(self, on_grid: bool = True, size: float = 0.05) -> None:
        super().__init__()
        self.on_grid, self.size = on_grid, size
        self.cells = nn.Embedding(CELLS, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = torch.round(x.abs() * 150) * self.size if self.on_grid else x.abs() * 7.3 + 0.013
        cell = (p // self.size).long().clamp(0, CELLS - 1)
        return self.cells(cell[:, :4]).sum(1) * 0.5 + x


class FrameEnds(nn.Module):
    """a length regulator: 8 segment durations in quarter seconds from the features, their frame ends
    ``cumsum(d) // hop``, and the frames each segment covers, ``arange(T) < ends``, summed over segments."""

    def __init__(self, hop: float = 0.05) -> None:
        super().__init__()
        self.hop = hop

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        durations = torch.round(x[:, :8].abs() * 8) * 0.25
        ends = torch.cumsum(durations, -1) // self.hop
        covered = (torch.arange(FRAMES, dtype=x.dtype) < ends.unsqueeze(-1)).to(x.dtype).sum(1)
        return covered[:, :WIDTH] * 0.1 + x


def voxel_cells() -> nn.Module: return _deep(VoxelCells)                                        # noqa: E704
def voxel_cells_off() -> nn.Module: return _deep(lambda: VoxelCells(on_grid=False))             # noqa: E704
def frame_ends() -> nn.Module: return _deep(FrameEnds)                                          # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
