"""The generic patch for a ``GridSample`` fed NaN coordinates (issue 30 point 2).

At an output position whose grid coordinate is NaN (a flow field normalised by a zero length, ``d / |d|``),
torch's ``grid_sample`` with zeros padding gives a value that does not depend on the image: NaN (bilinear
2-D, bicubic) or 0 (nearest, trilinear); ONNX Runtime's ``GridSample`` samples a finite pixel there.  A NaN
the model then zeroes or masks (``nan_to_num``, ``where``) is zeroed in torch and kept in the file.  No export
route changes the kernel; the graph counterfactual gives the file torch's value there
(``onnx/edit/lowerings/nan_grid.py``).  torch's value is probed, not tabled: ``grid_sample`` run with the node's mode,
padding and corner alignment on two different images at a NaN coordinate; where the two differ (border or
reflection padding samples a pixel) nothing is proposed.  Proposed only at a GridSample whose grid holds NaN
on the captured sample, and verified like any patch.  The class is ``op-compat`` (the runtime's NaN semantics, as ``nan_select``'s), kind
``runtime``; ``repair`` applies it.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from onnx import helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.patches import Patch


def nan_grid_patches(case: Case) -> list[Patch]:
    """The NaN-propagating rewrite of each GridSample whose grid holds NaN; none otherwise."""
    samplers, known = picked_values(case, lambda n: n.op_type == "GridSample" and len(n.input) > 1 and n.output)
    if not samplers:
        return []
    out = []
    for node in samplers:
        grid = known.get(node.input[1])
        if grid is None or np.asarray(grid).dtype.kind != "f" or not np.isnan(grid).any():
            continue
        value = torch_value_at_nan(node, np.ndim(grid))
        if value is None:
            continue
        said = "NaN" if np.isnan(value) else f"{value:g}"
        out.append(Patch(
            {"op": "rewrite", "rewrite": "grid_nan_propagate", "node": node.name,
             "value": "nan" if np.isnan(value) else value}, "op-compat",
            f"GridSample {node.name} is fed NaN grid coordinates ({int(np.isnan(grid).any(-1).sum())} output "
            f"position(s)): torch's grid_sample gives {said} there in every channel, ONNX Runtime's kernel samples a "
            f"finite pixel; with {said} at those positions (Where(IsNaN(grid) at the position, {said}, ·)) the "
            "file computes what torch computes",
            "keep NaN out of the grid in the model (a flow normalised by its length: `d / d.norm().clamp_min(eps)`), "
            "or let `drifttui repair` add the NaN propagation to the file; report the GridSample kernel's NaN "
            "handling to onnxruntime with `drifttui repro`",
            "runtime", module=case.module, nodes=[node.name]))
    return out


_MODES = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest", "cubic": "bicubic", "bicubic": "bicubic"}


def torch_value_at_nan(node: Any, grid_rank: int) -> Optional[float]:
    """What torch's grid_sample gives at a NaN coordinate with the node's mode, padding and corner alignment,
    when it is the same on two different images (NaN or a number); None when it depends on the image."""
    import torch
    import torch.nn.functional as F

    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    decode = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    mode = _MODES.get(decode(a.get("mode", "linear")))
    dims = grid_rank - 2
    if mode is None or dims not in (2, 3):
        return None
    grid = torch.full((1,) + (1,) * dims + (dims,), float("nan"))
    seen = []
    for image in (torch.ones((1, 1) + (3,) * dims), torch.arange(3.0 ** dims).view((1, 1) + (3,) * dims) + 5.0):
        try:
            y = F.grid_sample(image, grid, mode=mode, padding_mode=decode(a.get("padding_mode", "zeros")),
                              align_corners=bool(a.get("align_corners", 0)))
        except (RuntimeError, ValueError, NotImplementedError):
            return None
        seen.append(float(y.flatten()[0]))
    same = (np.isnan(seen[0]) and np.isnan(seen[1])) or seen[0] == seen[1]
    return seen[0] if same else None
