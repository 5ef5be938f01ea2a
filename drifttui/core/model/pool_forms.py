"""Average pooling with ``divisor_override`` by torch's definition (issue 30 point 2, the re-trace route of
``retrace.py``): ``aten.avg_pool2d`` and ``aten.avg_pool3d`` (``F.avg_pool2d/3d``, ``nn.AvgPool2d/3d``).

torch divides each window's sum by ``divisor_override`` when it is given, whatever the padding, the clipped
windows of ``ceil_mode`` or ``count_include_pad``.  ONNX ``AveragePool`` has no such attribute: both
exporters emit one that divides by the window size (or by the count of non-padded elements) and drop the
override without a word (the TorchScript exporter used to refuse it: pytorch/pytorch#105349; torchlib's
``aten_avg_pool2d`` takes the argument and never reads it).

The definition here: the window sums, as a depthwise convolution by a kernel of ones over the input padded
with zeros (so the windows torch's ``ceil_mode`` lets run past the input sum what is inside it), divided by
the override.  ``make_fx`` traces real tensors, so the output size (torch's ``pooling_output_shape``) and the
extra right padding are numbers.  A call without an override is left to the exporter (``NotImplemented``:
the re-trace keeps the op, which both exporters lower right).
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from drifttui.core.model.op_definition import RETRACE, OpDefinition, aten_op


def _tuple(v: Any, n: int) -> list[int]:
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    return v * n if len(v) == 1 else v


def _window_sums(x: Any, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                 out: Sequence[int]) -> Any:
    """Each window's sum: x padded with zeros (left ``padding``, right as far as the last window reaches),
    convolved depthwise by ones."""
    import torch
    import torch.nn.functional as F

    n = len(kernel)
    batched = x.dim() == n + 2
    xb = x if batched else x.unsqueeze(0)
    channels = xb.shape[1]
    pads: list[int] = []
    for d in reversed(range(n)):        # F.pad takes the last dim first
        size = xb.shape[2 + d]
        right = max(padding[d], (out[d] - 1) * stride[d] + kernel[d] - size - padding[d])
        pads += [padding[d], right]
    padded = F.pad(xb, pads)
    ones = torch.ones(channels, 1, *kernel, dtype=x.dtype)
    conv = F.conv2d if n == 2 else F.conv3d
    sums = conv(padded, ones, stride=stride, groups=channels)
    sums = sums[(slice(None), slice(None)) + tuple(slice(0, o) for o in out)]
    return sums if batched else sums.squeeze(0)


def _out_size(size: int, k: int, s: int, p: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape (dilation 1): with ceil_mode, a last window must start inside the input
    or its left padding."""
    out = (size + 2 * p - k + ((s - 1) if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p else out


def _avg_pool(n: int, x: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
              count_include_pad: bool = True, divisor_override: Optional[int] = None) -> Any:
    if divisor_override is None or not x.is_floating_point():
        return NotImplemented
    kernel = _tuple(kernel_size, n)
    step = _tuple(stride, n) if stride not in (None, (), []) else kernel
    pad = _tuple(padding, n)
    out = [_out_size(x.shape[x.dim() - n + d], kernel[d], step[d], pad[d], ceil_mode) for d in range(n)]
    return _window_sums(x, kernel, step, pad, out) / float(divisor_override)


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Optional[int] = None) -> Any:
    """torch's avg_pool2d with ``divisor_override`` by its definition (window sums / the override)."""
    return _avg_pool(2, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(x: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Optional[int] = None) -> Any:
    """torch's avg_pool3d with ``divisor_override`` by its definition (window sums / the override)."""
    return _avg_pool(3, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def pool_table() -> dict[Any, Callable[..., Any]]:
    import torch

    aten = torch.ops.aten
    return {aten.avg_pool2d.default: avg_pool2d, aten.avg_pool3d.default: avg_pool3d}


# the lowering each definition replaces (the message names it)
_DROPPED = ("an AveragePool that divides by the window size: divisor_override is dropped (ONNX AveragePool "
            "has no such attribute; pytorch/pytorch#105349)")
WRONG = {"aten.avg_pool2d.default": _DROPPED, "aten.avg_pool3d.default": _DROPPED}


def overridden(args: tuple, kwargs: dict) -> bool:
    """Whether a call of avg_pool2d/3d (its FX args) passes a divisor_override: the story's guard."""
    return (args[6] if len(args) > 6 else kwargs.get("divisor_override")) is not None


def _fix(key: str) -> str:
    return ("divide the window sums by the override yourself (`F.avg_pool2d(x, k, s, p, count_include_pad=True) * "
            "(window volume / divisor)` where ceil_mode clips no window, or a depthwise conv by ones / divisor: "
            f"`drifttui.core.model.pool_forms.{aten_op(key)}`), or {RETRACE}; reported upstream as "
            "pytorch/pytorch#105349 (export refused then, silently dropped today: file it with `drifttui repro`)")


DEFINITION = OpDefinition(
    "lowering", WRONG, pool_table,
    "the {exporter} exporter lowers torch's {target} with divisor_override as {lowered}; torch's definition "
    "(each window's sum divided by the override) computes what torch computes: ", _fix, overridden)
