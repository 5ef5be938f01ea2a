"""Epsilon, pads and alpha drifts planted in a deployed file AFTER its tool, found by content (a norm by
its scale tensor, a Conv by its weight, in any form the tools leave: float32, float16, int8 behind a
DequantizeLinear or in a QLinearConv / ConvInteger, NCHWc-blocked, folded with its BatchNorm), never by
a name the tool may have changed.  The same function on the raw export gives the origin the deployed
file must reproduce (issue 33, point 8).

- ``epsilon(path, gamma, eps, dst)``: the normalisation whose scale is ``gamma`` (LayerNormalization,
  Skip(Simplified)LayerNormalization, BatchNormalization, ...) gets ``eps``;
- ``pads(path, weight, dst)``: the Conv computing with ``weight`` pads one more row above and one less
  below (the output keeps its shape: a symmetric padding made asymmetric, as a SAME-padding bug does);
- ``alpha(path, k, dst)``: the ``k``-th GELU-like activation in graph order gets another constant: a
  Gelu's ``approximate`` (none -> tanh), a LeakyRelu / Elu / HardSigmoid / QuickGelu ``alpha`` x1.5 (ORT's
  FusedConv carries it as its first ``activation_params``; a HardSwish is split into the HardSigmoid and Mul
  ORT inlines it to, its 1/6 x1.5), the
  erf form's divisor sqrt(2) (or its 1/sqrt(2) factor) x1.25, the tanh form's 0.044715 -> 0.1.

Each returns ``dst``, or None when the file has no such node (a BatchNorm folded into its Conv, a
GELU fused into an op without a constant): that point is not applicable.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import onnx
from onnx import numpy_helper

from tests.deploy.arch_drifts import _reorder_cos

NORMS = ("LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
         "SkipSimplifiedLayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization")
CONVS = {"Conv": 1, "FusedConv": 1, "ConvInteger": 1, "QLinearConv": 3}
ALPHA_OPS = ("LeakyRelu", "Elu", "Celu", "HardSigmoid", "QuickGelu", "QLinearLeakyRelu", "Selu")


class _Graph:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.inits = {t.name: t for t in model.graph.initializer}
        self.consts = {n.output[0]: n.attribute[0].t for n in model.graph.node
                       if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"}
        self.producer = {o: n for n in model.graph.node for o in n.output}
        self.users: dict[str, list] = {}
        for n in model.graph.node:
            for i in n.input:
                self.users.setdefault(i, []).append(n)

    def tensor(self, name: str) -> Optional[Any]:
        return self.inits.get(name) or self.consts.get(name)

    def array(self, name: str, hops: int = 3) -> Optional[np.ndarray]:
        """The constant behind ``name`` as float64 (through DequantizeLinear / Cast / Transpose)."""
        t = self.tensor(name)
        if t is not None:
            return numpy_helper.to_array(t).astype(np.float64)
        p = self.producer.get(name)
        if p is None or not hops or not p.input:
            return None
        if p.op_type == "DequantizeLinear":
            q, s = self.array(p.input[0], 0), self.array(p.input[1], 0)
            z = self.array(p.input[2], 0) if len(p.input) > 2 and p.input[2] else np.zeros(1)
            if q is None or s is None:
                return None
            if s.size > 1:          # per channel along the node's axis
                shape = [1] * q.ndim
                shape[int(_attr(p, "axis", 1))] = s.size
                s, z = s.reshape(shape), z.reshape(shape) if z.size == s.size else z
            return (q - z) * s
        if p.op_type in ("Cast", "Identity"):
            return self.array(p.input[0], hops - 1)
        if p.op_type == "Transpose":
            a = self.array(p.input[0], hops - 1)
            perm = next((list(x.ints) for x in p.attribute if x.name == "perm"), None)
            return None if a is None else a.transpose(perm) if perm else a.T
        return None


def _rows_cos(a: np.ndarray, t: np.ndarray) -> float:
    if a.shape != t.shape:
        return 0.0
    x, y = a.reshape(a.shape[0], -1), t.reshape(t.shape[0], -1)
    nx, ny = np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1)
    return float(np.min(np.abs((x * y).sum(1)) / (nx * ny + 1e-30)))


def conv_node(g: _Graph, weight: np.ndarray) -> Optional[Any]:
    best, best_cos = None, 0.9
    for n in g.model.graph.node:
        pos = CONVS.get(n.op_type)
        if pos is None or len(n.input) <= pos:
            continue
        a = g.array(n.input[pos])
        if a is None or a.ndim != weight.ndim or a.shape[2:] != weight.shape[2:]:
            continue
        cos = max(_rows_cos(a, weight), _reorder_cos(a, weight))
        if cos > best_cos:
            best, best_cos = n, cos
    return best


def norm_node(g: _Graph, gamma: np.ndarray) -> Optional[Any]:
    """The normalisation whose scale input carries ``gamma`` (relative distance, not direction: every
    LayerNorm's scale points about the same way)."""
    best, best_d = None, 2e-2
    for n in g.model.graph.node:
        if n.op_type not in NORMS:
            continue
        for i in n.input[1:]:
            a = g.array(i)
            if a is None or a.size != gamma.size:
                continue
            d = float(np.linalg.norm(a.reshape(-1) - gamma.reshape(-1)) / (np.linalg.norm(gamma) + 1e-30))
            if d < best_d:
                best, best_d = n, d
    return best


def _set(node: Any, name: str, value: Any) -> None:
    for a in list(node.attribute):
        if a.name == name:
            node.attribute.remove(a)
    node.attribute.append(onnx.helper.make_attribute(name, value))


def _attr(node: Any, name: str, default: Any = None) -> Any:
    a = next((a for a in node.attribute if a.name == name), None)
    return default if a is None else onnx.helper.get_attribute_value(a)


def epsilon(path: Path, gamma: np.ndarray, eps: float, dst: Path) -> Optional[Path]:
    model = onnx.load(str(path))
    node = norm_node(_Graph(model), gamma)
    if node is None:
        return None
    _set(node, "epsilon", float(eps))
    onnx.save(model, str(dst))
    return dst


def pads(path: Path, weight: np.ndarray, dst: Path) -> Optional[Path]:
    model = onnx.load(str(path))
    node = conv_node(_Graph(model), weight)
    if node is None:
        return None
    p = list(_attr(node, "pads", []) or [])
    half = len(p) // 2
    if not p or p[0] < 1 or p[half] < 1:
        return None
    p[0], p[half] = p[0] + 1, p[half] - 1        # one more row above, one less below: same output shape
    _set(node, "pads", p)
    onnx.save(model, str(dst))
    return dst


def _scalar_inputs(g: _Graph, node: Any) -> list[tuple[int, float]]:
    out = []
    for k, i in enumerate(node.input):
        t = g.tensor(i)
        if t is not None and int(np.prod(t.dims)) == 1 and t.data_type in (1, 10, 11):
            out.append((k, float(numpy_helper.to_array(t).reshape(-1)[0])))
    return out


def _gelu_sites(g: _Graph) -> list[tuple[Any, str, Optional[int], float]]:
    """(node, how, input position, value) of each GELU-like constant, in graph order: an attribute
    ("approximate" / "alpha") or a scalar input (the erf form's divisor, the tanh form's 0.044715)."""
    sites = []
    for n in g.model.graph.node:
        if n.op_type == "Gelu" and n.domain in ("", "ai.onnx"):      # com.microsoft's Gelu has no attribute
            sites.append((n, "approximate", None, 0.0))
        elif n.op_type in ALPHA_OPS:
            sites.append((n, "alpha", None, float(_attr(n, "alpha", 0.01))))
        elif n.op_type == "HardSwish" and n.domain in ("", "ai.onnx"):    # x HardSigmoid(x; 1/6, 1/2), the
            sites.append((n, "hardswish", None, 1.0 / 6.0))             # form ORT inlines it to
        elif n.op_type == "FusedConv" and _attr(n, "activation", b"") in (b"HardSigmoid", b"LeakyRelu") \
                and _attr(n, "activation_params", []):
            sites.append((n, "activation_params", None, float(_attr(n, "activation_params")[0])))
        elif n.op_type in ("Div", "Mul") and any(u.op_type == "Erf" for u in g.users.get(n.output[0], [])):
            for k, v in _scalar_inputs(g, n):
                if abs(v - 2 ** 0.5) < 1e-3 or abs(v - 2 ** -0.5) < 1e-3:
                    sites.append((n, "input", k, v))
        elif n.op_type == "Mul":
            for k, v in _scalar_inputs(g, n):
                if abs(v - 0.044715) < 1e-5:
                    sites.append((n, "input", k, v))
    return sites


def alpha(path: Path, k: int, dst: Path) -> Optional[Path]:
    model = onnx.load(str(path))
    g = _Graph(model)
    sites = _gelu_sites(g)
    if not sites or not -len(sites) <= k < len(sites):
        return None
    node, how, pos, v = sites[k]
    if how == "approximate":
        _set(node, "approximate", "tanh" if _attr(node, "approximate", b"none") in (b"none", "none") else "none")
    elif how == "alpha":
        _set(node, "alpha", v * 1.5)
    elif how == "hardswish":
        _split_hardswish(model, node, v * 1.5)
    elif how == "activation_params":        # ORT's FusedConv carries its activation's alpha first
        _set(node, "activation_params", [v * 1.5, *list(_attr(node, "activation_params"))[1:]])
    else:
        new = 0.1 if abs(v - 0.044715) < 1e-5 else v * 1.25
        t = g.tensor(node.input[pos])
        name = f"planted_alpha_{k}"             # the constant may be shared: this node gets its own
        model.graph.initializer.append(numpy_helper.from_array(np.array(new, dtype=numpy_helper.to_array(t).dtype), name))
        node.input[pos] = name
    onnx.save(model, str(dst))
    return dst


def _split_hardswish(model: Any, node: Any, alpha: float) -> None:
    """A HardSwish written as ONNX defines it, ``x * HardSigmoid(x; alpha, 1/2)``, with ``alpha`` for its 1/6:
    ORT's function inlining makes that very pair of every HardSwish, so its files have a HardSigmoid site
    where the raw export has a HardSwish (the k-th site must be one module's in every file).  Named as the
    node was, last segment extended (a TorchScript name keeps its scope)."""
    x, y = node.input[0], node.output[0]
    gate = onnx.helper.make_node("HardSigmoid", [x], [f"{y}_planted_gate"], name=f"{node.name}_planted_gate",
                                 alpha=alpha, beta=0.5)
    mul = onnx.helper.make_node("Mul", [x, f"{y}_planted_gate"], [y], name=f"{node.name}_planted_mul")
    for p in node.metadata_props:          # a dynamo node's scope
        gate.metadata_props.add(key=p.key, value=p.value)
        mul.metadata_props.add(key=p.key, value=p.value)
    nodes = model.graph.node
    i = list(nodes).index(node)
    del nodes[i]
    nodes.insert(i, mul)
    nodes.insert(i, gate)
