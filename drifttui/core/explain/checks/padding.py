"""Drift class ``padding``: padding and pooling semantics.

* ``AveragePool``: ``count_include_pad`` (torch default True, ONNX default 0), ``ceil_mode``;
* ``MaxPool``: ``ceil_mode``, ``dilations``;
* explicit padding modules and Conv ``padding_mode``: ``Pad`` ``mode`` (reflect / edge /
  wrap / constant) and the constant value;
* Conv ``pads`` against ``padding`` for zero padding.
"""
from __future__ import annotations

from typing import Any

import torch

from drifttui.core.onnx.graph import attribute_values, tensor_array
from drifttui.core.result import Finding
from drifttui.core.explain.context import Context, clean

CHECK = "padding"
STATIC = True
_PAD_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap", "zeros": "constant",
             "constant": "constant"}


def _tuple(v: Any, n: int) -> list[int]:
    return list(v) if isinstance(v, (tuple, list)) else [int(v)] * n


def _finding(module: str, node: str, msg: str, ev: dict[str, Any], fix: str, severity: str = "error",
             patch: Any = None) -> Finding:
    if patch is not None:
        patch = {"op": "set_attribute", "node": node, "name": patch[0], "value": patch[1]}
    return Finding(CHECK, severity, module, [node], msg, clean(ev), fix, patch=patch)


def _pad_mode_of(m: Any) -> Any:
    name = type(m).__name__
    if name.startswith("ReflectionPad"):
        return "reflect"
    if name.startswith("ReplicationPad"):
        return "replicate"
    if name.startswith("CircularPad"):
        return "circular"
    if name.startswith(("ConstantPad", "ZeroPad")):
        return "constant"
    if isinstance(m, torch.nn.modules.conv._ConvNd) and m.padding_mode != "zeros":
        return m.padding_mode
    return None


def check(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for c, m in ctx.module_calls():
        cm = ctx.plan.calls[c.index]
        pad_mode = _pad_mode_of(m)
        for ni in cm.own if not pad_mode else cm.nodes:
            node = ctx.index.nodes[ni]
            a = attribute_values(node.proto)
            if node.op_type == "AveragePool" and isinstance(m, torch.nn.modules.pooling._AvgPoolNd):
                cip = bool(a.get("count_include_pad", 0))
                pads = a.get("pads", [])
                if cip != bool(m.count_include_pad) and any(pads or [0]):
                    out.append(_finding(c.module, node.name,
                                        f"AveragePool {node.name} has count_include_pad={int(cip)} but "
                                        f"{type(m).__name__} uses count_include_pad={m.count_include_pad}: border "
                                        "averages differ", {"onnx": a, "torch_count_include_pad": m.count_include_pad},
                                        "re-export; set count_include_pad explicitly on the module",
                                        patch=("count_include_pad", int(bool(m.count_include_pad)))))
                if bool(a.get("ceil_mode", 0)) != bool(m.ceil_mode):
                    out.append(_finding(c.module, node.name,
                                        f"AveragePool {node.name} ceil_mode={a.get('ceil_mode', 0)} but torch "
                                        f"ceil_mode={m.ceil_mode}", {"onnx": a, "torch_ceil_mode": m.ceil_mode},
                                        "re-export; the output size or border windows differ", "warning",
                                        ("ceil_mode", int(bool(m.ceil_mode)))))
            elif node.op_type == "MaxPool" and isinstance(m, torch.nn.modules.pooling._MaxPoolNd):
                if bool(a.get("ceil_mode", 0)) != bool(m.ceil_mode):
                    out.append(_finding(c.module, node.name,
                                        f"MaxPool {node.name} ceil_mode={a.get('ceil_mode', 0)} but torch "
                                        f"ceil_mode={m.ceil_mode}", {"onnx": a, "torch_ceil_mode": m.ceil_mode},
                                        "re-export; check that the output sizes agree", "warning"))
                dil = a.get("dilations")
                if dil and dil != _tuple(m.dilation, len(dil)):
                    out.append(_finding(c.module, node.name, f"MaxPool {node.name} dilations={dil} but torch "
                                        f"dilation={m.dilation}", {"onnx": a}, "re-export"))
            elif node.op_type == "Pad" and pad_mode:
                want = _PAD_MODE.get(pad_mode, pad_mode)
                got = a.get("mode", "constant")
                ev = {"onnx": a, "torch_padding_mode": pad_mode}
                if got != want:
                    out.append(_finding(c.module, node.name,
                                        f"Pad {node.name} uses mode={got} but {type(m).__name__} pads with "
                                        f"{pad_mode} ({want} in ONNX)", ev,
                                        "re-export with opset >= 18 (wrap needs 19); do not rewrite Pad by hand",
                                        patch=("mode", want)))
                elif want == "constant" and hasattr(m, "value") and len(node.inputs) > 2 and node.inputs[2]:
                    val = tensor_array(ctx.index, node.inputs[2])
                    if val is not None and val.size == 1 and abs(float(val.ravel()[0]) - float(m.value)) > 1e-7:
                        out.append(_finding(c.module, node.name,
                                            f"Pad {node.name} pads with {float(val.ravel()[0]):g} but torch with "
                                            f"{m.value:g}", ev, "re-export"))
            elif node.op_type == "Conv" and isinstance(m, torch.nn.modules.conv._ConvNd) and not pad_mode \
                    and isinstance(m.padding, (tuple, list)) and a.get("auto_pad", "NOTSET") == "NOTSET":
                pads = a.get("pads")
                want = list(m.padding) * 2
                if pads and pads != want and ctx.node_module(ni) == c.module:
                    out.append(_finding(c.module, node.name, f"Conv {node.name} pads={pads} but torch "
                                        f"padding={list(m.padding)}", {"onnx": a}, "re-export", "warning"))
    return out
