"""Candidate patches for the origin's own nodes, one family per drift class.

Each candidate is a hypothesis ("the epsilon should be the module's 1e-5") in the form of an
edit; the explain stage keeps those that remove the drift.  Candidates read the torch side
(the origin module, its parameters, buffers and plain tensor attributes) to know the value
the torch call implies, and fall back to the torch function's defaults for functional calls
(``F.interpolate`` or ``F.layer_norm`` inside a ``forward``), where no module holds it.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from drifttui.core.base.dtypes import ELEM_OF, INT_ELEMS

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.int_sites import every_int_div
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.explain.checks.interpolation import expected
from drifttui.core.onnx.graph import attribute_values
from drifttui.core.onnx.weights import read_tensor

_NORMS = ("LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
          "RMSNormalization", "SimplifiedLayerNormalization")
_LOW = {ELEM_OF[n]: n for n in ("float16", "bfloat16", "float8e4m3fn", "float8e5m2")}
_CTM = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
# activation attribute -> (torch module attribute, torch default)
_ACT = {"LeakyRelu": {"alpha": ("negative_slope", 0.01)}, "Elu": {"alpha": ("alpha", 1.0)},
        "Celu": {"alpha": ("alpha", 1.0)},
        "HardSigmoid": {"alpha": (None, 1.0 / 6.0), "beta": (None, 0.5)},
        "Selu": {"alpha": (None, 1.6732632423543772), "gamma": (None, 1.0507009873554805)}}


def _attrs(node: Any) -> dict[str, Any]:
    return attribute_values(node)


def _mods(module: Any) -> list[Any]:
    return list(module.modules()) if module is not None else []


def _module_attr(module: Any, name: Optional[str]) -> Optional[float]:
    if name is None:
        return None
    for m in _mods(module):
        v = getattr(m, name, None)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def module_eps(module: Any) -> list[float]:
    """The eps of the module and its children (CosineSimilarity, PairwiseDistance, norms)."""
    out = []
    for m in (module.modules() if module is not None else ()):
        v = getattr(m, "eps", None)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            out.append(float(v))
    return out


def _set(node: Any, name: str, value: Any, check: str, why: str, fix: str, module: str,
         kind: str = "export") -> Patch:
    return Patch({"op": "set_attribute", "node": node.name, "name": name, "value": value}, check, why, fix,
                 kind, module=module, nodes=[node.name])


def resize(case: Case, node: Any, module: Any) -> Iterator[Patch]:
    a = _attrs(node)
    mode = a.get("mode", "nearest")
    if (case.opset or 11) < 11 or node.op_type == "Upsample":
        want = "asymmetric" if mode == "nearest" else "half_pixel"
        if mode != "nearest":
            yield Patch({"op": "rewrite", "node": node.name, "rewrite": "resize_opset11", "mode": want,
                         "outputs": list(node.output)}, "interpolation",
                        f"opset-{case.opset} {node.op_type} {node.name} is always asymmetric; torch samples with {want}",
                        "export with opset >= 11 (the old Resize has no coordinate modes)", "export",
                        module=case.module, nodes=[node.name])
        return
    tried = set()
    if module is not None and hasattr(module, "mode") and hasattr(module, "align_corners"):
        exp = expected(str(module.mode), module.align_corners)
        order = [exp["coordinate_transformation_mode"][0]]
    else:
        order = list(_CTM)
    cur = a.get("coordinate_transformation_mode", "half_pixel")
    for ctm in order:
        if ctm == cur or ctm in tried:
            continue
        tried.add(ctm)
        yield _set(node, "coordinate_transformation_mode", ctm, "interpolation",
                   f"Resize {node.name} uses coordinate_transformation_mode={cur}; the torch call samples as {ctm}",
                   f"re-export so the Resize has coordinate_transformation_mode={ctm} (check align_corners on the "
                   "interpolate call)", case.module)
    if a.get("antialias", 0):
        yield _set(node, "antialias", 0, "interpolation", f"Resize {node.name} antialiases; torch does not",
                   "re-export with antialias=False on the interpolate call", case.module)
    if mode == "nearest" and a.get("nearest_mode", "round_prefer_floor") != "floor":
        yield _set(node, "nearest_mode", "floor", "interpolation",
                   f"Resize {node.name} rounds nearest pixels with {a.get('nearest_mode', 'round_prefer_floor')}; "
                   "torch mode='nearest' floors", "re-export; torch 'nearest' is asymmetric + floor", case.module)


def pooling(case: Case, node: Any, module: Any) -> Iterator[Patch]:
    a = _attrs(node)
    if node.op_type == "AveragePool":
        cip = int(a.get("count_include_pad", 0))
        want = getattr(module, "count_include_pad", None)
        if want is None or bool(want) != bool(cip):
            yield _set(node, "count_include_pad", 1 - cip, "padding",
                       f"AveragePool {node.name} count_include_pad={cip}; the torch pooling divides "
                       f"{'by the full window' if not cip else 'by the valid elements'}",
                       "re-export with count_include_pad set explicitly on the torch pooling", case.module)
    if node.op_type in ("AveragePool", "MaxPool"):
        ceil = int(a.get("ceil_mode", 0))
        want = getattr(module, "ceil_mode", None)
        if want is None or bool(want) != bool(ceil):
            yield _set(node, "ceil_mode", 1 - ceil, "padding", f"{node.op_type} {node.name} ceil_mode={ceil}",
                       "re-export with ceil_mode matching the torch pooling", case.module)
    if node.op_type == "Pad":
        cur = a.get("mode", "constant")
        for mode in ("constant", "reflect", "edge", "wrap"):
            if mode != cur:
                yield _set(node, "mode", mode, "padding", f"Pad {node.name} pads with mode={cur}, torch with {mode}",
                           f"re-export (opset >= 18 for {mode}) so the Pad mode matches padding_mode", case.module)


def _eps_candidates(module: Any, op: str) -> list[tuple[float, str]]:
    out = []
    eps = _module_attr(module, "eps")
    if eps is not None:
        out.append((eps, "the module's eps"))
    out.append((1e-5, "the torch function's default eps"))
    if op in ("RMSNormalization", "SimplifiedLayerNormalization"):
        out.append((float(np.finfo(np.float32).eps), "torch RMSNorm's default eps (finfo(float32).eps)"))
    return out


def normalization(case: Case, node: Any, module: Any, consts: dict[str, np.ndarray]) -> Iterator[Patch]:
    if node.op_type in _NORMS:
        got = float(_attrs(node).get("epsilon", 1e-5))
        for eps, src in _eps_candidates(module, node.op_type):
            if abs(eps - got) > 1e-3 * max(eps, got):
                yield _set(node, "epsilon", eps, "normalization",
                           f"{node.op_type} {node.name} has epsilon={got:.3g}; {src} is {eps:.3g}",
                           f"re-export so epsilon={eps:g} (the module's eps, or the value the forward passes)",
                           case.module)
        return
    if node.op_type == "Add":       # decomposed norm: var + eps, right before a Sqrt
        for v in node.input:
            arr = consts.get(v)
            if arr is None or arr.size != 1 or arr.dtype.kind != "f":
                continue
            got = float(arr.ravel()[0])
            for eps, src in _eps_candidates(module, "LayerNormalization"):
                if abs(eps - got) > 1e-3 * max(eps, abs(got)) and abs(got) < 1e-1:
                    yield Patch({"op": "replace_constant", "name": v, "value": [eps] if arr.ndim else eps},
                                "normalization", f"the decomposed norm adds {got:.3g} before Sqrt; {src} is {eps:.3g}",
                                f"use eps={eps:g} in the forward", "export",
                                payload=np.full(arr.shape, eps, arr.dtype), module=case.module, nodes=[node.name])


def activation(case: Case, node: Any, module: Any) -> Iterator[Patch]:
    a = _attrs(node)
    if node.op_type == "Gelu":
        cur = a.get("approximate", "none")
        want = getattr(module, "approximate", None) or ("tanh" if cur == "none" else "none")
        if want != cur:
            yield _set(node, "approximate", want, "op-compat",
                       f"Gelu {node.name} approximate={cur}; torch computes approximate={want}",
                       f"re-export; the torch GELU uses approximate={want!r}", case.module)
        return
    for attr, (torch_name, default) in _ACT.get(node.op_type, {}).items():
        got = a.get(attr)
        want = _module_attr(module, torch_name)
        want = default if want is None else want
        if got is None or abs(float(got) - want) > 1e-6 * max(1.0, abs(want)):
            yield _set(node, attr, float(want), "op-compat",
                       f"{node.op_type} {node.name} has {attr}={got}; torch uses {want:g}",
                       f"re-export; the torch activation's {torch_name or attr}={want:g} was lost", case.module)


_DYNAMIC = "dynamic"        # a Clip bound computed in the graph: never replaced


def _bound(node: Any, pos: int, consts: dict[str, np.ndarray]) -> Any:
    """The current min (pos 1) or max (pos 2) of a Clip: a constant input or an opset-10 attribute
    (a float), no bound (None), or a bound computed in the graph (_DYNAMIC)."""
    if len(node.input) > pos and node.input[pos]:
        arr = consts.get(node.input[pos])
        return float(arr.ravel()[0]) if arr is not None and arr.size == 1 else _DYNAMIC
    a = _attrs(node)
    return float(a[("min", "max")[pos - 1]]) if ("min", "max")[pos - 1] in a else None


def _scalars(module: Any) -> list[tuple[str, float]]:
    """Scalar tensors of the module (parameters, buffers, plain tensor attributes): a learned bound."""
    import torch

    out: list[tuple[str, float]] = []
    for m in _mods(module)[:1]:
        for k, v in vars(m).items():
            if isinstance(v, torch.Tensor) and v.numel() == 1 and v.is_floating_point():
                out.append((k, float(v)))
        for k, v in list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False)):
            if v.numel() == 1 and v.is_floating_point():
                out.append((k, float(v.detach())))
    return out[:4]


def clip(case: Case, node: Any, module: Any, consts: dict[str, np.ndarray], types: dict[str, int]) -> Iterator[Patch]:
    """Clip bounds against the torch side: the module's min_val/max_val (Hardtanh, ReLU6), a scalar
    parameter or buffer of the module (a learned bound), else ReLU6's (0, 6).  A bound computed in
    the graph is never replaced; new bounds get the dtype of the clipped value."""
    from onnx import helper

    lo, hi = _bound(node, 1, consts), _bound(node, 2, consts)
    cands: list[tuple[Any, Any, str]] = []
    lo_t, hi_t = _module_attr(module, "min_val"), _module_attr(module, "max_val")
    if lo_t is not None or hi_t is not None:
        cands.append((lo if lo_t is None else lo_t, hi if hi_t is None else hi_t, "the module's min_val/max_val"))
    for name, v in _scalars(module):
        if hi is not None and hi is not _DYNAMIC:
            cands.append((lo, v, f"the module's {name}"))
        if isinstance(lo, float) and v < (hi if isinstance(hi, float) else math.inf):
            cands.append((v, hi, f"the module's {name}"))
    if module is None or not cands:
        cands.append((0.0, 6.0, "ReLU6's bounds"))
    elem = types.get(node.input[0]) if node.input else None
    dtype = str(helper.tensor_dtype_to_np_dtype(elem)) if elem else None
    seen = set()
    for want_lo, want_hi, src in cands:
        change = {k: w for k, w, cur in (("min", want_lo, lo), ("max", want_hi, hi))
                  if cur is not _DYNAMIC and not _same(w, cur)}
        if not change or (want_lo, want_hi) in seen:
            continue
        seen.add((want_lo, want_hi))
        yield Patch({"op": "rewrite", "node": node.name, "rewrite": "clip_bounds", **change, "dtype": dtype},
                    "op-compat", f"Clip {node.name} bounds the values to [{_fmt(lo, '-inf')}, {_fmt(hi, 'inf')}]; "
                    f"{src} give [{_fmt(want_lo, '-inf')}, {_fmt(want_hi, 'inf')}]",
                    "re-export from the model you compare (a bound read with .item() or a Python number is "
                    "baked into the graph as a constant at export time)", "export", module=case.module,
                    nodes=[node.name])


def _same(a: Any, b: Any) -> bool:
    if not isinstance(a, float) or not isinstance(b, float):
        return a is b or a == b
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def _fmt(x: Any, unbounded: str) -> str:
    return unbounded if x is None else x if isinstance(x, str) else f"{x:g}"


def casts(case: Case, node: Any, elem_types: dict[str, int]) -> Iterator[Patch]:
    to = int(_attrs(node).get("to", 0))
    if to in _LOW:
        yield Patch({"op": "remove_cast", "node": node.name}, "dtype",
                    f"Cast {node.name} rounds to {_LOW[to]} where torch computes at full precision",
                    f"keep this value in float32 (export the module at full precision; do not cast to {_LOW[to]})",
                    "export", module=case.module, nodes=[node.name])


def int_div(case: Case, node: Any, elem_types: dict[str, int]) -> Iterator[Patch]:
    elems = [elem_types.get(v) for v in node.input]
    if all(e in INT_ELEMS for e in elems if e) and any(e in INT_ELEMS for e in elems):
        to = next(e for e in elems if e in INT_ELEMS)
        yield Patch({"op": "rewrite", "node": node.name, "rewrite": "floor_div", "to": to}, "dtype",
                    f"Div {node.name} on integers truncates towards zero; torch's // (floor_divide) floors",
                    "use torch.div(a, b, rounding_mode='trunc') if truncation is meant, or re-export with an "
                    "exporter that lowers floor division correctly", "export", module=case.module, nodes=[node.name])


def baked_shapes(case: Case, consts: dict[str, np.ndarray], node_of: dict[str, Any],
                 eps: Iterable[float] = (), shapes: Optional[dict[str, list[Any]]] = None) -> Iterator[Patch]:
    """Scalars that look like a dimension size (or 1/d, d**-0.5, d**0.5) seen at export time and not now;
    never a constant that holds the module's eps (or eps**2): that one is an epsilon, not a size.
    A size the file declares dynamic (``shapes``: the file's value shapes, a symbolic dim) is computed from
    the runtime shape (``runtime_size``): no constant is right at every length; a static one is replaced."""
    dims = sorted({int(d) for a in case.feeds.values() for d in a.shape if d > 1})
    epsilons = [e for x in eps for e in (x, x * x)]
    seen = 0
    for name, arr in consts.items():
        if arr.size > 8 or arr.size == 0 or arr.dtype.kind not in "fi":
            continue
        if arr.size == 1 and any(abs(float(arr.ravel()[0]) - e) <= 1e-6 * e for e in epsilons):
            continue
        flat = arr.ravel().astype(np.float64)
        for k, c in enumerate(flat):
            for form, inv in (("d", lambda x: x), ("1/d", lambda x: 1.0 / x), ("d**-0.5", lambda x: x ** -2.0),
                              ("d**0.5", lambda x: x ** 2.0)):
                try:
                    d0 = inv(float(c)) if c != 0 else 0.0
                except (OverflowError, ZeroDivisionError):
                    continue
                if not math.isfinite(d0) or d0 < 2 or abs(d0 - round(d0)) > 1e-3 * d0:
                    continue
                for d in (d for d in dims if d != int(round(d0))):
                    sized = _sized(case, d, shapes or {})
                    if sized and arr.size == 1:
                        for patch in _runtime_sizes(case, name, form, int(round(d0)), d, sized):
                            if seen >= 12:
                                return
                            seen += 1
                            yield patch
                        continue
                    new = flat.copy()
                    new[k] = {"d": d, "1/d": 1.0 / d, "d**-0.5": d ** -0.5, "d**0.5": d ** 0.5}[form]
                    if seen >= 12:
                        return
                    seen += 1
                    node = node_of.get(name)
                    yield Patch({"op": "replace_constant", "name": name, "value": new.tolist() if arr.ndim else new[0],
                                 "baked": int(round(d0)), "runtime": d},
                                "dynamic-axes",
                                f"{name} holds {form} for a size {int(round(d0))} baked in at export time; the "
                                f"runtime inputs have size {d}",
                                "export with dynamic shapes (dynamic_shapes= / dynamic_axes=) and compute the size "
                                "from the tensor (x.shape inside torch ops), not as a Python number", "export",
                                payload=new.reshape(arr.shape).astype(arr.dtype), module=case.module,
                                nodes=[node.name] if node is not None else [])


def _sized(case: Case, d: int, shapes: dict[str, list[Any]]) -> list[tuple[str, int]]:
    """(feed, axis) of the case whose size is ``d`` on this sample and whose dim the file declares dynamic."""
    return [(v, j) for v, a in case.feeds.items() for j, n in enumerate(a.shape)
            if n == d and j < len(shapes.get(v) or []) and not isinstance(shapes[v][j], int)][:4]


def _runtime_sizes(case: Case, name: str, form: str, baked: int, d: int,
                   sized: list[tuple[str, int]]) -> Iterator[Patch]:
    """``name`` computed from the runtime size of each (feed, axis) in ``sized``, at each node reading it."""
    readers = [n for n in case.model.graph.node if name in n.input and n.op_type != "Constant"][:2]
    for node in readers:
        for value, axis in sized:
            yield Patch({"op": "rewrite", "node": node.name, "rewrite": "runtime_size", "name": name,
                         "input": value, "axis": axis, "form": form, "baked": baked, "runtime": d},
                        "dynamic-axes",
                        f"{name} holds {form} for a size {baked} baked in at export time (a Python number taken "
                        f"from a tensor's shape), where the file declares that size dynamic: at run time it is "
                        f"{d} ({value} dim {axis}), and torch computes it from the input",
                        "compute the size from the tensor inside torch ops (x.shape[1] used as a tensor, not "
                        "float()/int()/math of it) and export with dynamic shapes; `drifttui repair` computes it "
                        "from the runtime shape in the file", "export", module=case.module, nodes=[node.name])


def graph_candidates(case: Case, module: Any, elem_types: dict[str, int],
                     shapes: Optional[dict[str, list[Any]]] = None) -> list[Patch]:
    """Attribute, cast, rewrite and constant patches for every node of the case."""
    consts: dict[str, np.ndarray] = {t.name: read_tensor(t) for t in case.model.graph.initializer
                                     if _small(t)}
    node_of: dict[str, Any] = {}
    for n in case.model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value" and _small(a.t):
                    consts[n.output[0]] = read_tensor(a.t)
                    node_of[n.output[0]] = n
        for v in n.input:
            node_of.setdefault(v, n)
    types = dict(elem_types)
    for k, arr in case.feeds.items():
        from onnx import helper

        types.setdefault(k, helper.np_dtype_to_tensor_dtype(arr.dtype))
    sqrt_inputs = {v for n in case.model.graph.node if n.op_type in ("Sqrt", "Rsqrt") for v in n.input}
    out: list[Patch] = []
    for node in case.model.graph.node:
        op = node.op_type
        if op in ("Resize", "Upsample"):       # Upsample: opset 7-9, always asymmetric like opset-10 Resize
            out.extend(resize(case, node, module))
        elif op in ("AveragePool", "MaxPool", "Pad"):
            out.extend(pooling(case, node, module))
        elif op in _NORMS or (op == "Add" and node.output[0] in sqrt_inputs):
            out.extend(normalization(case, node, module, consts))
        elif op == "Gelu" or op in _ACT:
            out.extend(activation(case, node, module))
        elif op == "Clip":
            out.extend(clip(case, node, module, consts, types))
        elif op == "Cast":
            out.extend(casts(case, node, types))
        elif op == "Div":
            out.extend(int_div(case, node, types))
    out.extend(every_int_div(out))
    out.extend(baked_shapes(case, consts, node_of, module_eps(module), shapes))
    return out


def _small(t: Any) -> bool:
    return math.prod(t.dims) <= 64
