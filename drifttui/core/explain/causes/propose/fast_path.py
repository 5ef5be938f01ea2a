"""torch's eager fast paths that no exporter traces: the patch that gives the file what they compute.

``nn.TransformerEncoder`` in eval (``enable_nested_tensor=True``, the default) with a
``src_key_padding_mask`` converts the sequence to a nested tensor without the padded positions and
pads the result back with 0 (pytorch/pytorch#97111, #86120): torch's output is exactly 0 there.  Both
exporters trace the dense path, which computes those positions like any other.  Any model that calls
such an encoder gets the patch ``Where(mask, 0, y)`` on the encoder's output (``rewrite: zero_masked``,
``onnx/edit/masked_positions.py``), proposed only where the torch side is that story: the mask is a
boolean input of the origin shaped like the output's positions, and torch's output is 0 at every masked
position and somewhere else not.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.onnx.edit.patches import Patch

UPSTREAM = "pytorch/pytorch#97111, #86120"


def _fast_encoder(module: Any) -> Optional[bool]:
    """batch_first of a TransformerEncoder that takes the nested-tensor fast path in eval, else None."""
    if not isinstance(module, torch.nn.TransformerEncoder) or module.training:
        return None
    if not getattr(module, "use_nested_tensor", getattr(module, "enable_nested_tensor", False)):
        return None
    first = module.layers[0] if len(module.layers) else None
    return bool(getattr(getattr(first, "self_attn", None), "batch_first", False))


def _mask(case: Case, out: np.ndarray, batch_first: bool) -> Optional[str]:
    """The boolean input of the case that marks the output's padded positions, the story's torch side."""
    n, s = (out.shape[0], out.shape[1]) if batch_first else (out.shape[1], out.shape[0])
    for name, arr in case.feeds.items():
        a = np.asarray(arr)
        if a.dtype != np.bool_ or a.shape != (n, s) or not a.any():
            continue
        pos = np.abs(out if batch_first else out.transpose(1, 0, 2)).reshape(n, s, -1).max(-1)
        if (pos[a] == 0).all() and (pos[~a] > 0).any():
            return name
    return None


def fast_path_patches(case: Case, module: Any) -> list[Patch]:
    batch_first = _fast_encoder(module)
    if batch_first is None:
        return []
    out = []
    for value, want in case.expected.items():
        want = np.asarray(want)
        node = next((n for n in case.model.graph.node if value in n.output), None)
        mask = _mask(case, want, batch_first) if want.ndim == 3 else None
        if node is None or mask is None:
            continue
        out.append(Patch(
            {"op": "rewrite", "node": node.name, "rewrite": "zero_masked", "mask": mask, "batch_first": batch_first},
            "lowering",
            f"{case.module} is an nn.TransformerEncoder that torch runs on its nested-tensor fast path (eval, "
            f"enable_nested_tensor=True, a src_key_padding_mask): torch drops the padded positions and pads its "
            f"output back with 0 there ({UPSTREAM}); the exporters trace the dense path, which computes the padded "
            f"positions like any other; with Where(mask, 0, output) on {node.name} the file computes what torch "
            "computes",
            f"build the encoder with enable_nested_tensor=False if the padded positions matter (torch then computes "
            f"them as the file does), or mask them in the forward; `drifttui repair` zeroes them in the file",
            "export", module=case.module, nodes=[node.name]))
    return out
