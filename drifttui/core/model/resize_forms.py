"""The bilinear resize of uint8 images by torch's own definition (issue 30 point 2, the re-trace route of
``retrace.py``): ``aten.upsample_bilinear2d`` (``F.interpolate(mode="bilinear")``) on a uint8 tensor.

torch resizes a uint8 image as Pillow does (aten/src/ATen/native/cpu/UpSampleKernel.cpp,
``_compute_index_ranges_int16_weights`` and ``basic_loop_aa_horizontal/vertical<uint8_t>``): separably, the
width first and then the height, each pass with its weights in fixed point (int16, at the largest precision
``p`` at which the axis's largest weight still fits) and each pass's sums rounded back to uint8
(``(acc + 2**(p-1)) >> p``, clamped to 0..255).  ONNX ``Resize`` on uint8 (both exporters emit one) interpolates
both axes in float and rounds once: one level off wherever the intermediate rounding matters.

The definition here: each pass a matrix product of the image (as float64: the sums are integers below 2**31,
exact) by that axis's int16 weights, then the shift as a floor division, the clamp and the cast.  The weights
are numbers: ``make_fx`` traces real tensors, so the sizes are known.  A float image is left to the exporter
(``NotImplemented``: the re-trace keeps the op, which both exporters lower right).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

from drifttui.core.model.op_definition import RETRACE, OpDefinition


def _source(i: int, scale: float, align_corners: bool) -> float:
    """area_pixel_compute_source_index (linear: a negative half-pixel index is 0)."""
    return scale * i if align_corners else max(scale * (i + 0.5) - 0.5, 0.0)


def axis_weights(size_in: int, size_out: int, align_corners: bool, scale: Optional[float]) -> tuple[list, int]:
    """(rows of int16 weights over the input, one per output index; the precision p) for one axis, as
    torch's ``_compute_index_ranges_int16_weights`` computes them for bilinear without antialias."""
    if align_corners:
        s = (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else size_in / size_out
    rows, wt_max = [], 0.0
    for i in range(size_out):
        real = _source(i, s, align_corners)
        idx = min(int(math.floor(real)), size_in - 1)
        lam = min(max(real - idx, 0.0), 1.0)
        row = [0.0] * size_in
        row[idx] += 1.0 - lam
        row[min(idx + 1, size_in - 1)] += lam
        wt_max = max(wt_max, *row)
        rows.append(row)
    p = 0
    while p < 22 and int(0.5 + wt_max * (1 << (p + 1))) < (1 << 15):
        p += 1
    quant = [[float(int(-0.5 + v * (1 << p)) if v < 0 else int(0.5 + v * (1 << p))) for v in row] for row in rows]
    return quant, p


def _pass(x: Any, weights: list, p: int, last: bool) -> Any:
    """One axis resized: the fixed-point sums, shifted with rounding, clamped to uint8's range (float64)."""
    import torch

    w = torch.tensor(weights, dtype=torch.float64)
    acc = torch.matmul(x, w.t()) if last else torch.matmul(w, x)
    return torch.clamp(torch.floor((acc + float(1 << (p - 1))) / float(1 << p)), 0.0, 255.0)


def _resize(x: Any, size: Sequence[int], align_corners: bool, scales: Sequence[Optional[float]]) -> Any:
    import torch

    if x.dtype != torch.uint8 or x.dim() != 4:
        return NotImplemented
    wh, ph = axis_weights(x.shape[2], size[0], align_corners, scales[0])
    ww, pw = axis_weights(x.shape[3], size[1], align_corners, scales[1])
    y = _pass(x.to(torch.float64), ww, pw, last=True)           # the width first, as torch
    return _pass(y, wh, ph, last=False).to(torch.uint8)


def upsample_bilinear2d(x: Any, output_size: Sequence[int], align_corners: bool, scales_h: Optional[float] = None,
                        scales_w: Optional[float] = None) -> Any:
    """aten.upsample_bilinear2d.default of a uint8 image by torch's definition."""
    return _resize(x, output_size, align_corners, (scales_h, scales_w))


def upsample_bilinear2d_vec(x: Any, output_size: Optional[Sequence[int]], align_corners: bool,
                            scale_factors: Optional[Sequence[float]]) -> Any:
    """aten.upsample_bilinear2d.vec: the size from the scale factors when none is given (torch's rule)."""
    if output_size is None:
        if scale_factors is None:
            return NotImplemented
        output_size = [int(math.floor(x.shape[2 + d] * scale_factors[d])) for d in range(2)]
        return _resize(x, output_size, align_corners, tuple(scale_factors))
    return _resize(x, output_size, align_corners, (None, None))


def resize_table() -> dict[Any, Callable[..., Any]]:
    import torch

    aten = torch.ops.aten
    return {aten.upsample_bilinear2d.default: upsample_bilinear2d, aten.upsample_bilinear2d.vec: upsample_bilinear2d_vec}


_ROUNDED_ONCE = ("a Resize that interpolates a uint8 image in float over both axes and rounds once, where torch "
                 "resizes the width then the height in int16 fixed point, rounding each pass to uint8")
WRONG = {"aten.upsample_bilinear2d.default": _ROUNDED_ONCE, "aten.upsample_bilinear2d.vec": _ROUNDED_ONCE}


def on_uint8(args: tuple, kwargs: dict) -> bool:
    """Whether an upsample_bilinear2d call (its FX args) resizes a uint8 image: the story's guard."""
    import torch

    value = getattr(args[0], "meta", {}).get("val") if args else None
    return getattr(value, "dtype", None) == torch.uint8


def _fix(key: str) -> str:
    return ("resize the width, then the height, each pass rounded to uint8 in torch's fixed point "
            "(`drifttui.core.model.resize_forms.upsample_bilinear2d_vec`), or resize a float copy where one "
            f"level of difference is acceptable, or {RETRACE}; not reported to torch.onnx / onnxscript yet: "
            "file it with `drifttui repro`")


DEFINITION = OpDefinition(
    "lowering", WRONG, resize_table,
    "the {exporter} exporter lowers torch's {target} of a uint8 image as {lowered}; torch's definition computes "
    "what torch computes: ", _fix, on_uint8)
