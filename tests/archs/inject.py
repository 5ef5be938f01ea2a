"""Inject one known drift into the ONNX nodes of one chosen module (both exporters).

A node belongs to module M when M is its *deepest* scope: dynamo's ``name_scopes`` metadata
(module names, then the FX node name), or the TorchScript node-name path
(``/encoder/layer.0/output/LayerNorm/LayerNormalization``).  Independent of drifttui's mapping.
"""
from __future__ import annotations

import ast
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

LINEAR = ("Conv", "Gemm", "MatMul")


def deepest(node: Any) -> str:
    """The qualified name of the node's deepest module scope."""
    for p in node.metadata_props:
        if p.key == "pkg.torch.onnx.name_scopes":
            scopes = ast.literal_eval(p.value)
            return scopes[-2] if len(scopes) >= 2 else ""
    segs = node.name.strip("/").split("/")[:-1] if node.name.startswith("/") else []
    q = ""
    for seg in segs:
        head, _, tail = seg.rpartition("_")
        seg = head if tail.isdigit() and head else seg          # TorchScript's repeated-call suffix
        if q and seg.startswith(q + "."):
            q = seg                                             # the segment is qualified already
        elif q and "." in seg and seg.split(".")[0] == q.rsplit(".", 1)[-1]:
            q = (q.rsplit(".", 1)[0] + "." + seg) if "." in q else seg   # "blocks" then "blocks.0"
        else:
            q = f"{q}.{seg}" if q else seg
    return q


def owned(node: Any, module: str) -> bool:
    return deepest(node) == module


def find(proto: Any, module: str, ops: tuple[str, ...]) -> Any:
    """``module`` may list alternatives, ``a|b``: a folded Conv's node is in the BatchNorm's scope (dynamo)."""
    for mod in module.split("|"):
        for node in proto.graph.node:
            if node.op_type in ops and owned(node, mod):
                return node
    raise LookupError(f"no {'/'.join(ops)} node owned by {module}")


def _static_weight(proto: Any, node: Any) -> Any:
    inits = {t.name: t for t in proto.graph.initializer}
    for name in node.input[1:2]:
        if name in inits:
            return inits[name]
        for n in proto.graph.node:      # Identity(weight) / Transpose(weight) of an initializer
            if name in n.output and n.input and n.input[0] in inits:
                return inits[n.input[0]]
    raise LookupError(f"{node.name}: no initializer weight")


def scale_weight(proto: Any, module: str, factor: float = 1.05) -> str:
    node = find(proto, module, LINEAR)
    t = _static_weight(proto, node)
    w = numpy_helper.to_array(t).copy()
    w *= np.asarray(factor, dtype=w.dtype)
    t.CopyFrom(numpy_helper.from_array(w, t.name))
    return node.op_type


def set_epsilon(proto: Any, module: str, eps: float = 0.5) -> str:
    node = find(proto, module, ("LayerNormalization", "BatchNormalization", "SimplifiedLayerNormalization"))
    for a in node.attribute:
        if a.name == "epsilon":
            a.f = eps
            return node.op_type
    node.attribute.append(onnx.helper.make_attribute("epsilon", eps))
    return node.op_type


def cast_fp16(proto: Any, module: str, ops: tuple[str, ...] = LINEAR) -> str:
    """Round the module's linear output through float16 (Cast to fp16 and back)."""
    node = find(proto, module, ops)
    out = node.output[0]
    half, back = f"{out}__fp16", f"{out}__fp32"
    for n in proto.graph.node:
        for k, v in enumerate(n.input):
            if v == out:
                n.input[k] = back
    for o in proto.graph.output:
        if o.name == out:
            raise LookupError("the value is a graph output")
    pos = list(proto.graph.node).index(node) + 1
    c1 = onnx.helper.make_node("Cast", [out], [half], to=onnx.TensorProto.FLOAT16, name=f"{node.name}__cast16")
    c2 = onnx.helper.make_node("Cast", [half], [back], to=onnx.TensorProto.FLOAT, name=f"{node.name}__cast32")
    for c in (c2, c1):
        c.metadata_props.extend(node.metadata_props)
        proto.graph.node.insert(pos, c)
    return node.op_type


def set_activation(proto: Any, module: str) -> str:
    """HardSigmoid alpha 1/6 -> 0.2, HardSwish -> HardSigmoid*x with alpha 0.2, Gelu -> tanh."""
    node = find(proto, module, ("HardSigmoid", "Gelu", "LeakyRelu", "Elu"))
    if node.op_type == "Gelu":
        del node.attribute[:]
        node.attribute.append(onnx.helper.make_attribute("approximate", "tanh"))
    else:
        name = "alpha"
        for a in node.attribute:
            if a.name == name:
                a.f = a.f * 1.2 if a.f else 0.2
                return node.op_type
        node.attribute.append(onnx.helper.make_attribute(name, 0.2))
    return node.op_type


def set_resize_mode(proto: Any, module: str, mode: str = "asymmetric") -> str:
    """Every Resize the module owns: coordinate_transformation_mode -> ``mode`` (a half_pixel /
    align_corners mix-up).  All of them, since a Resize to the same size is unchanged by the mode."""
    nodes = [n for mod in module.split("|") for n in proto.graph.node if n.op_type == "Resize" and owned(n, mod)]
    if not nodes:
        raise LookupError(f"no Resize node owned by {module}")
    for node in nodes:
        for a in node.attribute:
            if a.name == "coordinate_transformation_mode":
                if a.s.decode() == mode:
                    raise LookupError(f"{node.name}: coordinate_transformation_mode is {mode} already")
                a.s = mode.encode()
                break
        else:                           # the default is half_pixel
            node.attribute.append(onnx.helper.make_attribute("coordinate_transformation_mode", mode))
    return "Resize"


INJECT = {"weight": scale_weight, "eps": set_epsilon, "fp16": cast_fp16, "act": set_activation,
          "resize": set_resize_mode}
