"""Graph edits: a linear or cubic ``Resize`` made to sample where torch's interpolate call samples
(``causes/propose/edits/resize_map.py`` proposes them from the torch call itself).

* ``resize_scales``: the Resize given the torch call's scales instead of output sizes.  torch's upsample
  kernels, given ``scale_factor`` (and no ``recompute_scale_factor``), map output to input coordinates with
  ``1 / scale_factor``; a Resize given ``sizes`` maps with ``in / out`` (ONNX derives its scale from the
  sizes).  Where ``in * scale_factor`` is not a whole number the two differ at every output position.
  With the same scales ONNX Runtime computes the same output size (``floor(in * scale)``) and samples at
  torch's coordinates.
* ``resize_matmul``: the Resize replaced by torch's own sampling weights for the file's shapes, measured from
  the torch call (one matrix per resized axis of a 4-D input, ``rows``: out_h x in_h, ``cols``: out_w x
  in_w), applied as ``MatMul(MatMul(rows, X), cols^T)``.  Every separable linear resampling is such a map:
  the antialiased kernels' filter supports, ``align_corners`` with antialias (torch keeps half-pixel centres
  and stretches the scale to ``(in - 1) / (out - 1)``, which no Resize attribute says), bicubic borders.  The
  shapes are the file's, static.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, replace_with

MAX_ENTRIES = 1 << 16           # entries per weight matrix written into a spec (a 256 -> 256 axis)


def apply_resize_scales(model: Any, spec: dict[str, Any]) -> None:
    """The Resize ``spec["node"]`` given ``spec["scales"]`` (one per axis) in place of its sizes."""
    from onnx import numpy_helper

    node = find_node(model, spec["node"], "Resize")
    scales = np.asarray(spec["scales"], dtype=np.float32)
    name = f"{node.name}/drifttui_scales"
    model.graph.initializer.append(numpy_helper.from_array(scales, name))
    roi = node.input[1] if len(node.input) > 1 else ""
    ins = [node.input[0], roi, name]
    del node.input[:]
    node.input.extend(ins)


def apply_resize_matmul(model: Any, spec: dict[str, Any]) -> None:
    """The 4-D Resize ``spec["node"]`` replaced by ``MatMul(MatMul(rows, X), cols^T)``."""
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "Resize")
    dtype = input_dtype(model, node.input[0])
    rows = np.asarray(spec["rows"], dtype=dtype)
    cols_t = np.asarray(spec["cols"], dtype=dtype).T
    if rows.ndim != 2 or cols_t.ndim != 2:
        raise ValueError("the weights of a 4-D resize are two matrices")
    p = f"{node.name}/drifttui_map"
    inits = [numpy_helper.from_array(rows, f"{p}/rows"), numpy_helper.from_array(np.ascontiguousarray(cols_t),
                                                                                  f"{p}/cols_t")]
    new = [helper.make_node("MatMul", [f"{p}/rows", node.input[0]], [f"{p}/h"], name=f"{p}/h"),
           helper.make_node("MatMul", [f"{p}/h", f"{p}/cols_t"], [node.output[0]], name=f"{p}/w")]
    replace_with(model, node, new, inits)


APPLY = {"resize_scales": apply_resize_scales, "resize_matmul": apply_resize_matmul}
