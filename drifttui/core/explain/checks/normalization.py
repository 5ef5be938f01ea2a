"""Drift class ``normalization``: epsilon and formula differences.

Compares LayerNormalization / BatchNormalization / InstanceNormalization /
GroupNormalization ``epsilon`` (and LayerNormalization ``axis``) with the torch module's
``eps`` and ``normalized_shape``; for decomposed norms, the scalar added before ``Sqrt``.
BatchNorm folded into a Conv has no epsilon left to compare (the folded weights are
checked by the custom-module analysis).
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.onnx.graph import attribute_values, tensor_array
from drifttui.core.result import Finding, display_name
from drifttui.core.explain.context import Context, clean

CHECK = "normalization"
STATIC = True
_NORM_OPS = ("LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
             "RMSNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization")


def _eps_of(module: Any) -> Optional[float]:
    eps = getattr(module, "eps", None)
    if eps is None and type(module).__name__ == "RMSNorm":
        import torch

        return float(torch.finfo(torch.float32).eps)
    return float(eps) if isinstance(eps, (int, float)) else None


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-3 * max(abs(a), abs(b), 1e-12)


def _decomposed_eps(ctx: Context, nodes: list[int]) -> list[tuple[str, float]]:
    """Scalars added right before a Sqrt inside the module (x.var() + eps).sqrt()."""
    out = []
    for ni in nodes:
        node = ctx.index.nodes[ni]
        if node.op_type != "Add":
            continue
        if not any(ctx.index.nodes[c].op_type in ("Sqrt", "Rsqrt") for o in node.outputs
                   for c in ctx.index.consumers.get(o, [])):
            continue
        for v in node.inputs:
            arr = tensor_array(ctx.index, v) if ctx.index.is_static(v) else None
            if arr is not None and arr.size == 1:
                out.append((node.name, float(arr.ravel()[0])))
    return out


def check(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for c, m in ctx.module_calls():
        eps = _eps_of(m)
        if eps is None or "Norm" not in type(m).__name__:
            continue
        nodes = ctx.plan.calls[c.index].own
        found = False
        for ni in nodes:
            node = ctx.index.nodes[ni]
            if node.op_type not in _NORM_OPS:
                continue
            found = True
            attrs = attribute_values(node.proto)
            got = float(attrs.get("epsilon", 1e-5))
            ev: dict[str, Any] = {"node": node.name, "op_type": node.op_type, "onnx_epsilon": got,
                                  "torch_eps": eps, "torch_class": type(m).__name__}
            if not _same(got, eps):
                out.append(Finding(CHECK, "error", c.module, [node.name],
                                   f"{node.op_type} {node.name} has epsilon={got:.3g} but {type(m).__name__} "
                                   f"{display_name(c.module)} uses eps={eps:.3g}", clean(ev),
                                   f"re-export without editing the graph; set eps={eps:g} on the module (or the "
                                   "epsilon attribute) so both sides agree",
                                   patch={"op": "set_attribute", "node": node.name, "name": "epsilon", "value": eps}))
            ns = getattr(m, "normalized_shape", None)
            if node.op_type == "LayerNormalization" and ns is not None:
                axis = int(attrs.get("axis", -1))
                rank = len(ctx.index.shapes.get(node.inputs[0], []) or [])
                want = -len(tuple(ns))
                if axis != want and not (rank and axis == rank + want):
                    ev["axis"] = axis
                    ev["normalized_shape"] = list(ns)
                    out.append(Finding(CHECK, "error", c.module, [node.name],
                                       f"LayerNormalization {node.name} normalises from axis {axis} but "
                                       f"normalized_shape={list(ns)} means axis {want}", clean(ev),
                                       "re-export; check custom reshapes around the norm"))
        if not found:
            for name, val in _decomposed_eps(ctx, nodes):
                if not _same(val, eps):
                    out.append(Finding(CHECK, "error", c.module, [name],
                                       f"decomposed {type(m).__name__} adds {val:.3g} before Sqrt but eps={eps:.3g}",
                                       clean({"node": name, "onnx_epsilon": val, "torch_eps": eps}),
                                       f"use eps={eps:g} consistently in forward and export",
                                       patch={"op": "replace_constant", "name": _const_of(ctx, name), "value": eps}))
    return out


def _const_of(ctx: Context, node_name: str) -> str:
    """The scalar input (epsilon) of the Add named ``node_name``."""
    ni = ctx.node_by_name(node_name)
    if ni is not None:
        for v in ctx.index.nodes[ni].inputs:
            if ctx.index.is_static(v):
                return v
    return node_name
