"""torch's eager fast paths that no exporter traces: the patch that gives the file what they compute.

``nn.TransformerEncoder`` in eval (``enable_nested_tensor=True``, the default) with a
``src_key_padding_mask`` converts the sequence to a nested tensor without the padded positions and
pads the result back with 0 (pytorch/pytorch#97111, #86120): torch's output is exactly 0 there.  Both
exporters trace the dense path, which computes those positions like any other.  Any model that calls
such an encoder gets the patch ``Where(mask, 0, y)`` on the encoder's output (``rewrite: zero_masked``,
``onnx/edit/lowerings/masked_positions.py``; on what its final ``norm`` reads when it has one: torch pads before the
norm), proposed only where the torch side is that story: the mask is a boolean input of the origin shaped
like the output's positions, and torch's output is 0 (or the final norm of 0) at every masked position and
somewhere else not.

``nn.TransformerEncoderLayer`` in eval runs its fused fast path (``torch._transformer_encoder_layer_fwd``, taken
when no hook is attached: drifttui's hooks are global for that reason), which reads a float ``src_mask`` (or a
float key-padding mask) as a boolean one: every non-zero entry masked, no value added (pytorch/pytorch#118628,
open; #107084 for the same reading in ``nn.MultiheadAttention``, fixed there).  The exporters trace the slow path,
which adds the mask to the scores: an ALiBi or a relative-position bias differs.  The patch reads the mask added
to the scores before a Softmax as torch's fast path does (``rewrite: bool_mask``), proposed only where the
origin is such a layer in eval with the fast path enabled and the added mask (where it is a constant) holds a
finite non-zero entry.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.weights import read_tensor
from drifttui.core.result import display_name

UPSTREAM = "pytorch/pytorch#97111, #86120"
LAYER_UPSTREAM = "pytorch/pytorch#118628"


def _fast_encoder(module: Any) -> Optional[bool]:
    """batch_first of a TransformerEncoder that takes the nested-tensor fast path in eval, else None."""
    if not isinstance(module, torch.nn.TransformerEncoder) or module.training:
        return None
    if not getattr(module, "use_nested_tensor", getattr(module, "enable_nested_tensor", False)):
        return None
    first = module.layers[0] if len(module.layers) else None
    return bool(getattr(getattr(first, "self_attn", None), "batch_first", False))


def _mask(case: Case, out: np.ndarray, batch_first: bool, fill: np.ndarray) -> Optional[str]:
    """The boolean input of the case that marks the output's padded positions, the story's torch side:
    torch's output is ``fill`` (0, or the final norm of 0) at every marked position and not everywhere else."""
    n, s = (out.shape[0], out.shape[1]) if batch_first else (out.shape[1], out.shape[0])
    for name, arr in case.feeds.items():
        a = np.asarray(arr)
        if a.dtype != np.bool_ or a.shape != (n, s) or not a.any():
            continue
        pos = np.abs((out if batch_first else out.transpose(1, 0, 2)) - fill).reshape(n, s, -1).max(-1)
        if (pos[a] <= 1e-6 * max(1.0, float(np.abs(fill).max(initial=0.0)))).all() and (pos[~a] > 1e-6).any():
            return name
    return None


def _fill_and_node(case: Case, module: Any, value: str) -> Optional[tuple[np.ndarray, Any]]:
    """What torch has at a padded position of ``value`` (0, or its final norm's value of 0) and the node
    whose output the zeros belong on (the final norm's input when the encoder has one)."""
    node = next((n for n in case.model.graph.node if value in n.output), None)
    norm = getattr(module, "norm", None)
    if node is None or norm is None:
        return (np.zeros(1), node) if node is not None else None
    with torch.no_grad():
        width = int(case.expected[value].shape[-1])
        fill = norm(torch.zeros(1, 1, width)).reshape(-1).numpy().astype(np.float64)
    inner = next((n for n in case.model.graph.node if node.input and node.input[0] in n.output), None)
    return (fill, inner) if inner is not None and "Norm" in node.op_type else None


def _fast_layer(module: Any) -> bool:
    """An ``nn.TransformerEncoderLayer`` torch runs on its fused fast path (eval, the fast path enabled)."""
    return (isinstance(module, torch.nn.TransformerEncoderLayer) and not module.training
            and bool(torch.backends.mha.get_fastpath_enabled()))


def _constant(model: Any, value: str) -> Optional[np.ndarray]:
    init = next((t for t in model.graph.initializer if t.name == value), None)
    return read_tensor(init) if init is not None else None


def bool_mask_patches(case: Case, module: Any) -> list[Patch]:
    """The float mask added to the attention scores before each Softmax, read as a boolean one."""
    if not _fast_layer(module):
        return []
    made = {o: n for n in case.model.graph.node for o in n.output}
    out = []
    for sm in (n for n in case.model.graph.node if n.op_type == "Softmax"):
        add = made.get(sm.input[0])
        if add is None or add.op_type != "Add":
            continue
        ops = [getattr(made.get(v), "op_type", None) for v in add.input]
        if ops.count("MatMul") != 1:
            continue
        k = 1 - ops.index("MatMul")
        mask = _constant(case.model, add.input[k])
        if mask is not None and not (np.isfinite(mask) & (mask != 0)).any():
            continue        # a 0 / -inf mask: both readings agree
        out.append(Patch(
            {"op": "rewrite", "node": add.name, "rewrite": "bool_mask", "input": k}, "lowering",
            f"{display_name(case.module)} is an nn.TransformerEncoderLayer that torch runs on its fused fast path in eval "
            f"(torch._transformer_encoder_layer_fwd), which reads a float attention mask as a boolean one: every "
            f"non-zero entry masked, its value not added ({LAYER_UPSTREAM}); the exporters trace the slow path, "
            f"which adds the mask to the scores (an ALiBi or relative-position bias); with the mask read as "
            f"boolean at {add.name} (Where(mask == 0, 0, -inf)) the file computes what torch computes",
            "torch's fast path drops the bias: disable it (torch.backends.mha.set_fastpath_enabled(False)) or run the "
            "layer's slow path for a float bias, then the file computes what torch does; `drifttui repair` writes "
            "the fast path's boolean reading into the file", "export", module=case.module, nodes=[add.name]))
    return out


def fast_path_patches(case: Case, module: Any) -> list[Patch]:
    batch_first = _fast_encoder(module)
    if batch_first is None:
        return bool_mask_patches(case, module)
    out = []
    for value, want in case.expected.items():
        want = np.asarray(want)
        found = _fill_and_node(case, module, value) if want.ndim == 3 else None
        mask = _mask(case, want, batch_first, found[0]) if found is not None else None
        if mask is None:
            continue
        node = found[1]
        out.append(Patch(
            {"op": "rewrite", "node": node.name, "rewrite": "zero_masked", "mask": mask, "batch_first": batch_first},
            "lowering",
            f"{display_name(case.module)} is an nn.TransformerEncoder that torch runs on its nested-tensor fast path (eval, "
            f"enable_nested_tensor=True, a src_key_padding_mask): torch drops the padded positions and pads its "
            f"output back with 0 there ({UPSTREAM}); the exporters trace the dense path, which computes the padded "
            f"positions like any other; with Where(mask, 0, y) on {node.name} (the encoder's output, or what its "
            "final norm reads) the file computes what torch computes",
            "build the encoder with enable_nested_tensor=False if the padded positions matter (torch then computes "
            "them as the file does), or mask them in the forward; `drifttui repair` zeroes them in the file",
            "export", module=case.module, nodes=[node.name]))
    return out
