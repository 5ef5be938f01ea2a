"""Graph edit for a ``GridSample`` fed NaN coordinates (issue 30): torch gives a value of its own there.

torch's ``grid_sample`` computes each output position from its grid coordinates; at a NaN coordinate, with
zeros padding, it gives the same value whatever the image: NaN (bilinear 2-D, bicubic: the interpolation
weights are NaN) or 0 (nearest, trilinear: the NaN index is out of bounds).  ONNX Runtime's ``GridSample``
kernel turns the NaN coordinate into a pixel index and samples a finite pixel there.
``grid_nan_propagate`` makes the file give torch's value (``spec["value"]``: "nan" or a number) at those
positions, keeping the node and its output name::

    y' = Where(Unsqueeze(ReduceMax(Cast(IsNaN(grid)), axis=-1), 1) > 0, value, y)

(the grid is ``(N, H_out, W_out, 2)`` (or ``(N, D, H, W, 3)``), the output ``(N, C, H_out, W_out)``: the mask
of each output position broadcasts over the channels).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.lowerings.nan_select import ai_onnx_opset, nan_mask, splice

AXES_AS_INPUT = 13          # Unsqueeze reads its axes as an input from opset 13, ReduceMax from opset 18


def apply_grid_nan_propagate(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    m = nan_mask(model, spec["node"], ("GridSample",), 1, "a GridSample")
    p, out, dtype, new, inits = m.p, m.out, m.dtype, m.new, m.inits
    opset = ai_onnx_opset(model)
    inits += [numpy_helper.from_array(np.full((), float(spec.get("value", "nan")), dtype), f"{p}/nan")]
    if opset >= 18:
        inits.append(numpy_helper.from_array(np.asarray([-1], np.int64), f"{p}/last"))
        new.append(helper.make_node("ReduceMax", [f"{p}/mask", f"{p}/last"], [f"{p}/any"], name=f"{p}/any",
                                    keepdims=0))
    else:
        new.append(helper.make_node("ReduceMax", [f"{p}/mask"], [f"{p}/any"], name=f"{p}/any", axes=[-1], keepdims=0))
    if opset >= AXES_AS_INPUT:
        inits.append(numpy_helper.from_array(np.asarray([1], np.int64), f"{p}/channel"))
        new.append(helper.make_node("Unsqueeze", [f"{p}/any", f"{p}/channel"], [f"{p}/pos"], name=f"{p}/pos"))
    else:
        new.append(helper.make_node("Unsqueeze", [f"{p}/any"], [f"{p}/pos"], name=f"{p}/pos", axes=[1]))
    new += [helper.make_node("Greater", [f"{p}/pos", f"{p}/zero"], [f"{p}/has"], name=f"{p}/has"),
            helper.make_node("Where", [f"{p}/has", f"{p}/nan", f"{p}/raw"], [out], name=f"{p}/where")]
    splice(model, m)


APPLY = {"grid_nan_propagate": apply_grid_nan_propagate}
