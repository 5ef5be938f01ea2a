"""Which graph edit each ``{"op": "rewrite", "rewrite": name}`` patch applies: name -> ``apply(model, spec)``.

Each edit module under ``onnx/edit/`` exports its own ``APPLY`` table; this module gathers them in one place, so
``patches.py`` holds the patch model and the edits it makes itself, not a list of every lowering.
"""
from __future__ import annotations

from typing import Any, Callable

from drifttui.core.onnx.edit.numerics.accumulate64 import APPLY as ACCUMULATE64
from drifttui.core.onnx.edit.numerics.cast_first import APPLY as CAST_FIRST
from drifttui.core.onnx.edit.numerics.operand_wide import APPLY as OPERAND_WIDE
from drifttui.core.onnx.edit.numerics.origin64 import APPLY as ORIGIN64
from drifttui.core.onnx.edit.numerics.half_recurrence import APPLY as HALF_RECURRENCE
from drifttui.core.onnx.edit.lowerings.crossed_clip import APPLY as CROSSED_CLIP
from drifttui.core.onnx.edit.lowerings.shift_count import APPLY as SHIFT_COUNT
from drifttui.core.onnx.edit.lowerings.dropped_addend import APPLY as DROPPED_ADDEND
from drifttui.core.onnx.edit.lowerings.packed_padding import APPLY as PACKED_PADDING
from drifttui.core.onnx.edit.lowerings.int_pow import APPLY as INT_POW
from drifttui.core.onnx.edit.lowerings.int_prod import APPLY as INT_PROD
from drifttui.core.onnx.edit.lowerings.int_wrap import APPLY as INT_WRAP
from drifttui.core.onnx.edit.numerics.opmath import APPLY as OPMATH
from drifttui.core.onnx.edit.numerics.opmath_scalar import APPLY as OPMATH_SCALAR
from drifttui.core.onnx.edit.lowerings.resize_gather import apply_resize_gather
from drifttui.core.onnx.edit.lowerings.resize_map import APPLY as RESIZE_MAP
from drifttui.core.onnx.edit.lowerings.runtime_size import APPLY as RUNTIME_SIZE
from drifttui.core.onnx.edit.lowerings.adaptive_window import APPLY as ADAPTIVE_WINDOW
from drifttui.core.onnx.edit.lowerings.runtime_int import APPLY as RUNTIME_INT
from drifttui.core.onnx.edit.lowerings.mask_select import APPLY as MASK_SELECT
from drifttui.core.onnx.edit.lowerings.masked_positions import APPLY as MASKED
from drifttui.core.onnx.edit.lowerings.nan_grid import APPLY as NAN_GRID
from drifttui.core.onnx.edit.lowerings.nan_compare import APPLY as NAN_COMPARE
from drifttui.core.onnx.edit.lowerings.nan_select import APPLY as NAN_SELECT
from drifttui.core.onnx.edit.lowerings.quantize_torch import APPLY as QUANTIZE
from drifttui.core.onnx.edit.lowerings.remainder import APPLY as REMAINDER
from drifttui.core.onnx.edit.lowerings.singular import APPLY as SINGULAR
from drifttui.core.onnx.edit.lowerings.stable_forms import apply_elu_expm1, apply_expm1, apply_log1p, apply_logaddexp
from drifttui.core.onnx.edit.rewriting import APPLY

REWRITES: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    **APPLY, "resize_gather": apply_resize_gather, "log1p": apply_log1p, "expm1": apply_expm1,
    "elu_expm1": apply_elu_expm1, "logaddexp": apply_logaddexp, **SINGULAR, **REMAINDER, **QUANTIZE, **NAN_SELECT, **NAN_COMPARE, **MASKED,
    **ACCUMULATE64, **NAN_GRID, **INT_POW, **INT_PROD, **INT_WRAP, **OPMATH, **OPMATH_SCALAR, **CAST_FIRST, **ORIGIN64,
    **OPERAND_WIDE, **HALF_RECURRENCE, **RESIZE_MAP, **RUNTIME_SIZE, **ADAPTIVE_WINDOW, **RUNTIME_INT, **DROPPED_ADDEND, **PACKED_PADDING,
    **CROSSED_CLIP, **SHIFT_COUNT,
    **MASK_SELECT}

__all__ = ["REWRITES"]
