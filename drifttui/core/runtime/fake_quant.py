"""The model's own quantisation: the fake-quantise calls PyTorch makes in one forward (quantisation-aware training).

A QAT model rounds its activations (and weights) to int8 codes itself: ``torch.fake_quantize_per_tensor_affine`` /
``_per_channel_affine``, their learnable variants, ``torch.ao.quantization.FakeQuantize`` modules (which call those)
and ``FusedMovingAvgObsFakeQuantize`` (``fused_moving_avg_obs_fake_quant``), ``quantize_per_tensor(...)`` /
``quantize_per_channel(...)`` then ``.dequantize()``, or a PT2E model's ``quantized_decomposed`` quantize / dequantize
ops (a weight stored as int8 is only dequantized there).  :func:`recorded` watches one forward through a
``TorchFunctionMode`` (every call passes through unchanged) and keeps each call's quantisation parameters: the scale
(float32, as the exporters write it), the zero point and the channel axis.  ``core/prepare/qat.py`` matches the
file's quantizers against them.  A float model makes no such call, so it records nothing.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np
import torch
from torch.overrides import TorchFunctionMode


@dataclass(frozen=True)
class FakeQuant:
    """One quantisation torch made: its scale(s) and zero point(s), per tensor (axis None) or per channel."""

    scale: tuple[float, ...]   # float32 values
    zero: tuple[int, ...]
    axis: Optional[int] = None


# function name -> (argument position of scale, of zero point, of axis or None); fused_moving_avg_obs_fake_quant's
# scale and zero point are read after the call (its observer updates them in place)
_PARAMS = {
    "fake_quantize_per_tensor_affine": (1, 2, None),
    "fake_quantize_per_channel_affine": (1, 2, 3),
    "_fake_quantize_learnable_per_tensor_affine": (1, 2, None),
    "_fake_quantize_learnable_per_channel_affine": (1, 2, 3),
    "quantize_per_tensor": (1, 2, None),
    "quantize_per_channel": (1, 2, 3),
    "fused_moving_avg_obs_fake_quant": (5, 6, 10),
    "dequantize_per_tensor": (1, 2, None),      # torch.ops.quantized_decomposed (PT2E)
    "dequantize_per_channel": (1, 2, 3),
}
_NAMES = {"scale": 1, "scales": 1, "zero_point": 2, "zero_points": 2, "axis": 3, "ch_axis": 3}


class _Recorder(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[FakeQuant] = []

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "").split(".")[0]     # an OpOverload: "quantize_per_tensor.default"
        where = _PARAMS.get(name)
        if where is not None:
            try:
                self._keep(name, where, args, kwargs)
            except (IndexError, TypeError, ValueError, RuntimeError):
                pass            # an unusual signature: that call is not recorded (the file's quantizer keeps its budget)
        return out

    def _keep(self, name: str, where: tuple, args: tuple, kwargs: dict) -> None:
        def arg(pos: Optional[int]) -> Any:
            if pos is None:
                return None
            if pos < len(args):
                return args[pos]
            key = next((k for k, v in _NAMES.items() if v == pos and k in kwargs), None)
            return kwargs.get(key) if key else None
        if name == "fused_moving_avg_obs_fake_quant":
            if not bool(args[2]):       # fake_quant_on is off: nothing rounded
                return
            axis = args[10] if bool(args[11]) else None
        else:
            axis = arg(where[2])
        scale = np.asarray(_numbers(arg(where[0])), dtype=np.float32).reshape(-1)
        zero = np.asarray(_numbers(arg(where[1])), dtype=np.float64).round().astype(np.int64).reshape(-1)
        self.found.append(FakeQuant(tuple(float(s) for s in scale), tuple(int(z) for z in zero),
                                    None if axis is None else int(axis)))


def _numbers(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return v.detach().float().cpu().numpy()
    return v


@contextmanager
def recorded(enabled: bool = True) -> Iterator[list[FakeQuant]]:
    """``with recorded() as found:`` one forward; ``found`` then holds its fake-quantise calls, in call order
    (``enabled`` False: records nothing and watches nothing)."""
    if not enabled:
        yield []
        return
    rec = _Recorder()
    with rec:
        yield rec.found
