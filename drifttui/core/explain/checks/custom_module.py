"""Custom-module causes (drift class ``custom-module``; mismatched weights as ``weights``).

* plain tensor attributes (``self.gamma = torch.full(...)``) that are neither parameters nor
  buffers: a ``state_dict`` round trip does not carry them, so the exported file can hold
  other values than the model being compared (the lost-LayerScale case);
* parameters/buffers without an initializer, with another dtype, or with other values
  (matched by name, else by shape - also transposed - among the module's own static inputs;
  Conv weights folded with a following BatchNorm are compared with the folded product);
* eager-versus-traced hazards in the module's ``forward`` source: ``.item()``, ``.tolist()``,
  Python numbers from tensor shapes, ``if`` on tensor values.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.base.dtypes import rounding_of
from drifttui.core.base.metrics import elementwise_gap
from drifttui.core.onnx.graph import elem_type_name, tensor_array
from drifttui.core.prepare.plan.folding import bn_scale
from drifttui.core.result import FUSED, NOT_EXPORTED, Finding
from drifttui.core.explain.context import Context, clean

CHECK = "custom-module"
STATIC = True

_SOURCE_HAZARDS = [
    (re.compile(r"\.item\(\)"), "`.item()` turns a tensor into a Python number: the trace bakes in one value"),
    (re.compile(r"\.tolist\(\)"), "`.tolist()` turns a tensor into Python values: the trace bakes them in"),
    (re.compile(r"\.numpy\(\)"), "`.numpy()` leaves the graph: the trace bakes the values in"),
    (re.compile(r"^\s*(if|elif|while)\b[^\n]*(\.any\(|\.all\(|\.sum\(|\.max\(|\.min\(|torch\.)", re.M),
     "a data-dependent branch: the trace keeps only the path taken for the example input"),
    (re.compile(r"(int|float)\([^)\n]*\.(shape|size\()"), "a Python number from a tensor shape: baked into constants"),
]


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


def _close(a: np.ndarray, b: np.ndarray) -> tuple[bool, float]:
    a64 = a.astype(np.float64)
    diff = elementwise_gap(a, b)
    finite = a64[np.isfinite(a64)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    return diff <= 1e-6 * max(1.0, scale), diff


def _statics(ctx: Context, module: str, own_only: bool) -> list[tuple[str, np.ndarray, list[str]]]:
    """Static (initializer/Constant) inputs of the module's nodes -> (name, array, consumer node names)."""
    found: dict[str, tuple[np.ndarray, list[str]]] = {}
    for ci in ctx.calls_of(module):
        cm = ctx.plan.calls[ci]
        for ni in (cm.own if own_only else cm.nodes):
            node = ctx.index.nodes[ni]
            for v in node.inputs:
                if v and ctx.index.is_static(v):
                    if v not in found:
                        arr = tensor_array(ctx.index, v)
                        if arr is None or arr.dtype.kind != "f":
                            continue
                        found[v] = (arr, [])
                    found[v][1].append(node.name)
    return [(k, a, n) for k, (a, n) in found.items()]


def _folded_expected(ctx: Context, param: str, t: torch.Tensor, consumer_owner: Optional[str]) -> Optional[np.ndarray]:
    """Conv weight folded with the BatchNorm that owns the Conv node: w * gamma / sqrt(var + eps)."""
    mods = ctx.modules()
    bn = mods.get(consumer_owner or "")
    if not isinstance(bn, torch.nn.modules.batchnorm._BatchNorm) or bn.running_var is None:
        return None
    scale = bn_scale(bn)
    if param.endswith(".weight") and t.dim() >= 2 and t.shape[0] == scale.shape[0]:
        return _np((t.detach().double() * scale.reshape(-1, *([1] * (t.dim() - 1)))).float())
    return None


def _has_op(ctx: Context, module: str, op: str) -> bool:
    return any(ctx.index.nodes[ni].op_type == op for ci in ctx.calls_of(module) for ni in ctx.plan.calls[ci].own)


def _owner_of_consumers(ctx: Context, value: str) -> Optional[str]:
    owners = {ctx.node_module(ni) for ni in ctx.index.consumers.get(value, [])}
    owners.discard(None)
    return owners.pop() if len(owners) == 1 else None


def analyse(ctx: Context) -> dict[str, Any]:
    """One walk over the called modules gathering what step 6 and the custom-module check both
    read (cached in ctx.cache): tensor attributes, parameters and buffers against their ONNX
    counterparts, and the forward's source hazards."""
    if "custom" in ctx.cache:
        return ctx.cache["custom"]
    called = {c.module for c in ctx.calls}
    statuses: dict[str, set[str]] = {}
    for L in ctx.result.layers:
        statuses.setdefault(L.module, set()).add(L.status)
    out: dict[str, Any] = {"tensor_attributes": [], "param_value_diffs": [], "params_without_initializer": [],
                           "dtype_diffs": [], "folded_weights_checked": 0, "source_hazards": [],
                           "rounded_value_diffs": [], "float64_tensors": []}
    for name, m in ctx.modules().items():
        if name not in called:
            continue
        for k, v in vars(m).items():
            if isinstance(v, torch.Tensor) and k not in m._parameters and k not in m._buffers \
                    and v.is_floating_point():
                out["tensor_attributes"].append(_tensor_attribute(ctx, name, k, v))
        for pn, t in list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False)):
            if pn != "num_batches_tracked" and t.is_floating_point():
                _check_param(ctx, name, m, pn, t, statuses.get(name, set()), out)
                if t.dtype == torch.float64:        # compared at float32 like the rest: say so
                    out["float64_tensors"].append(f"{name}.{pn}" if name else pn)
    out["source_hazards"] = source_hazards(ctx)
    ctx.cache["custom"] = out
    return out


def _tensor_attribute(ctx: Context, name: str, k: str, v: torch.Tensor) -> dict[str, Any]:
    """A plain tensor attribute and the ONNX static value that carries it (by name, else shape)."""
    qual = f"{name}.{k}" if name else k
    entry: dict[str, Any] = {"module": name, "attr": k, "shape": list(v.shape),
                             "dtype": str(v.dtype).replace("torch.", ""), "onnx_value": None}
    tv = _np(v)
    cands = [(n, a, c) for n, a, c in _statics(ctx, name, own_only=False)
             if a.shape == tv.shape or (a.size == tv.size and a.squeeze().shape == tv.squeeze().shape)]
    named = [x for x in cands if x[0] == qual] or [x for x in cands if k in x[0]] or \
        (cands if len(cands) == 1 else [])
    if named:
        n, a, consumers = named[0]
        same, diff = _close(tv.reshape(a.shape), a)
        entry.update(onnx_value=n, onnx_nodes=consumers, max_abs_diff=diff, equal=same,
                     torch_mean=float(tv.mean()) if tv.size else 0.0,
                     onnx_mean=float(a.astype(np.float64).mean()) if a.size else 0.0)
    return entry


def _check_param(ctx: Context, name: str, m: torch.nn.Module, pn: str, t: torch.Tensor, statuses: set[str],
                 out: dict[str, Any]) -> None:
    """One parameter or buffer: its initializer's dtype and values (through a BatchNorm fold), or,
    without an initializer of its name, a static input of the module's own nodes that holds it."""
    qual = f"{name}.{pn}" if name else pn
    tv = _np(t)
    if qual in ctx.index.initializers:
        _check_initializer(ctx, name, qual, t, tv, out)
        return
    if statuses & {FUSED, NOT_EXPORTED} or (
            isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and not _has_op(ctx, name, "BatchNormalization")):
        return                   # folded into a neighbour: compared through the folded weight
    matches = [(n, a, c) for n, a, c in _statics(ctx, name, own_only=True)
               if a.shape == tv.shape or (tv.ndim == 2 and a.shape == tv.T.shape)]
    ok = any((a.shape == tv.shape and _close(tv, a)[0]) or (tv.ndim == 2 and a.shape == tv.T.shape
                                                           and _close(np.ascontiguousarray(tv.T), a)[0])
             for n, a, c in matches)
    if not ok:
        out["params_without_initializer"].append({"param": qual, "module": name,
                                                  "candidates": [n for n, _, _ in matches][:3]})


def _check_initializer(ctx: Context, name: str, qual: str, t: torch.Tensor, tv: np.ndarray,
                       out: dict[str, Any]) -> None:

    arr = tensor_array(ctx.index, qual)
    odt = elem_type_name(ctx.index.initializers[qual].data_type)
    tdt = str(t.dtype).replace("torch.", "")
    if odt != tdt:
        out["dtype_diffs"].append({"param": qual, "torch": tdt, "onnx": odt, "module": name})
    if arr is None or arr.shape != tv.shape:
        return
    owner = _owner_of_consumers(ctx, qual)
    expected = tv
    if owner is not None and owner != name:
        folded = _folded_expected(ctx, qual, t, owner)
        if folded is None:
            return               # used by another module in a way we cannot reproduce
        expected = folded
    same, diff = _close(expected, arr.astype(np.float32))
    if same or _stored_rounded(arr, expected):      # a float16 file's weight: torch's, rounded to its type
        out["folded_weights_checked"] += expected is not tv
        return
    nodes = [ctx.index.nodes[ni].name for ni in ctx.index.consumers.get(qual, [])]
    entry = {"param": qual, "module": owner or name, "onnx_value": qual, "onnx_nodes": nodes,
             "max_abs_diff": diff, "folded": expected is not tv}
    if rounding_of(arr) and not rounding_of(expected):
        # the dtype check owns the finding; step 6 still says the values differ
        out["rounded_value_diffs"].append({**entry, "rounded_to": rounding_of(arr)})
    else:
        out["param_value_diffs"].append(entry)


def _stored_rounded(arr: np.ndarray, expected: np.ndarray) -> bool:
    """``arr``, an initializer stored in a reduced float type (a float16 file's), holds ``expected`` rounded to that
    type, to one step of it (a fold computed in another order rounds once more): the file's precision, which the
    precision budget judges, not a weight that differs."""
    if arr.dtype.kind != "f" or arr.dtype.itemsize >= 4:
        return False
    with np.errstate(over="ignore", invalid="ignore"):     # a weight past the type's range: inf, no warning printed
        r = np.asarray(expected).astype(arr.dtype)
        step = np.spacing(np.abs(r)).astype(np.float32)
        return bool(np.all(np.abs(arr.astype(np.float32) - r.astype(np.float32)) <= step))


def source_hazards(ctx: Context) -> list[dict[str, Any]]:
    """Eager-vs-traced hazards in the forward of the origin's module and its enclosing modules."""
    o = ctx.result.drift_origin
    if o is None:
        return []
    mods = ctx.modules()
    names = [o.module]
    parts = o.module.split(".")
    names += [".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1)]
    out = []
    for name in names:
        m = mods.get(name)
        if m is None or type(m).__module__.startswith("torch."):
            continue
        try:
            src = inspect.getsource(type(m).forward)
        except (OSError, TypeError):
            continue
        for rx, why in _SOURCE_HAZARDS:
            for hit in rx.finditer(src):
                line = src[: hit.start()].count("\n")
                out.append({"module": name, "class": type(m).__name__, "line": src.splitlines()[line].strip()[:120],
                            "why": why})
    return out[:20]


def _fix_attr(a: dict[str, Any]) -> str:
    return (f"make `{a['attr']}` a parameter or a buffer in {a['module'] or '(root)'} "
            f"(self.register_buffer('{a['attr']}', tensor)) so state_dict carries it, then re-export or reload")


def check(ctx: Context) -> list[Finding]:
    data = analyse(ctx)
    out: list[Finding] = []
    for a in data["tensor_attributes"]:
        nodes = a.get("onnx_nodes", [])
        if a.get("onnx_value") is not None and not a.get("equal", True):
            out.append(Finding(CHECK, "error", a["module"], nodes,
                               f"plain tensor attribute {a['module']}.{a['attr']} (not a parameter or buffer) differs "
                               f"from the ONNX constant {a['onnx_value']} by {a['max_abs_diff']:.3g} (torch mean "
                               f"{a['torch_mean']:.4g}, ONNX mean {a['onnx_mean']:.4g}): the file was exported from "
                               "other values than the model compared (state_dict does not carry it)",
                               clean(a), _fix_attr(a)))
        else:
            out.append(Finding(CHECK, "warning", a["module"], nodes,
                               f"{a['module']}.{a['attr']} is a plain tensor attribute, not a parameter or buffer: "
                               "state_dict, .to() and load_state_dict ignore it", clean(a), _fix_attr(a)))
    for p in data["param_value_diffs"]:
        out.append(Finding("weights", "error", p["module"], p["onnx_nodes"],
                           f"initializer {p['onnx_value']} differs from torch {p['param']}"
                           f"{' (folded with BatchNorm)' if p['folded'] else ''} by {p['max_abs_diff']:.3g}",
                           clean(p), "re-export from the weights you compare with (the file is stale or was edited)"))
    for d in data["dtype_diffs"]:
        out.append(Finding("dtype", "warning", d["module"], [],
                           f"{d['param']} is {d['torch']} in torch but {d['onnx']} in the ONNX file", clean(d),
                           "export the model in the dtype you deploy, or cast the model before exporting"))
    if data["params_without_initializer"]:
        miss = data["params_without_initializer"]
        out.append(Finding(CHECK, "info", miss[0]["module"], [],
                           f"{len(miss)} parameter(s)/buffer(s) have no initializer with the same name or values "
                           f"(e.g. {', '.join(m['param'] for m in miss[:3])}): folded, transposed or fused by the "
                           "exporter", clean({"params": miss[:20]}),
                           "nothing to do unless one of them belongs to the drift origin"))
    for h in data["source_hazards"]:
        out.append(Finding(CHECK, "warning", h["module"], [], f"{h['class']}.forward: {h['why']}: `{h['line']}`",
                           clean(h), "compute it with tensor ops, or export with dynamic_shapes and check other "
                                     "input shapes"))
    return out
