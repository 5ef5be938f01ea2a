"""Edits of exported ONNX graphs that inject one known drift each (for the built-in examples).

Nodes are found by module scope, for both exporters: dynamo ``name_scopes`` metadata and
TorchScript node-name paths.
"""
from __future__ import annotations

import ast
from typing import Any, Callable

from drifttui.core.onnx.weights import read_tensor


def _in_scope(node: Any, module: str) -> bool:
    for p in node.metadata_props:
        if p.key == "pkg.torch.onnx.name_scopes":
            return module in ast.literal_eval(p.value)
    # TorchScript writes nested names as /layer3/layer3.1/conv1/Conv: the module's own segment
    # and its parent's qualified name both appear in the node name
    parent, _, last = module.rpartition(".")
    return node.name.startswith("/") and f"/{last}/" in node.name and parent in node.name


def _find(proto: Any, op: str, *modules: str) -> Any:
    for module in modules:
        for node in proto.graph.node:
            if node.op_type == op and _in_scope(node, module):
                return node
    raise RuntimeError(f"no {op} node in scope {modules}")


def round_conv_weight_bf16(conv: str, bn: str) -> Callable[[Any, str], None]:
    def transform(proto: Any, exporter: str) -> None:
        import numpy as np
        from onnx import numpy_helper

        node = _find(proto, "Conv", conv, bn)
        inits = {t.name: t for t in proto.graph.initializer}
        t = inits[node.input[1]]
        w = read_tensor(t).astype(np.float32)
        bits = w.view(np.uint32)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
        t.CopyFrom(numpy_helper.from_array(rounded, t.name))
    return transform


def set_layernorm_epsilon(module: str, eps: float) -> Callable[[Any, str], None]:
    def transform(proto: Any, exporter: str) -> None:
        node = _find(proto, "LayerNormalization", module)
        for a in node.attribute:
            if a.name == "epsilon":
                a.f = eps
                return
        import onnx
        node.attribute.append(onnx.helper.make_attribute("epsilon", eps))
    return transform


def set_resize_mode(module: str, mode: str) -> Callable[[Any, str], None]:
    def transform(proto: Any, exporter: str) -> None:
        import onnx

        node = _find(proto, "Resize", module)
        for a in node.attribute:
            if a.name == "coordinate_transformation_mode":
                a.s = mode.encode()
                return
        node.attribute.append(onnx.helper.make_attribute("coordinate_transformation_mode", mode))
    return transform


def scale_conv_channel(conv: str, bn: str, channel: int, factor: float) -> Callable[[Any, str], None]:
    """Scale ONE output channel of the Conv that holds ``conv`` (+ its folded BatchNorm ``bn``):
    the drift of one BatchNorm channel whose running statistics changed after export."""
    def transform(proto: Any, exporter: str) -> None:
        import numpy as np
        from onnx import numpy_helper

        node = _find(proto, "Conv", conv, bn)
        inits = {t.name: t for t in proto.graph.initializer}
        for name in node.input[1:3]:            # weight [C_out, ...] and bias [C_out]
            if name in inits:
                t = inits[name]
                w = read_tensor(t).copy()
                w[channel] *= np.asarray(factor, dtype=w.dtype)
                t.CopyFrom(numpy_helper.from_array(w, t.name))
    return transform
