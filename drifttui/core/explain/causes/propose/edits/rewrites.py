"""Patches for exporter mistranslations that have a graph edit: each names what the exporter got
wrong, and the edit that makes the node compute what torch computes (the edits: ``rewrite_edits.py``); and
the ORT workaround patches of ``workarounds.py``'s catalogue.

* ``floor_cast``: a float -> integer Cast truncates towards zero; torch's ``//`` / ``floor_divide``
  floors (TorchScript lowers a float floor division to Div + Cast) -> Floor before the Cast;
* ``softplus_threshold``: ONNX Softplus has no threshold; torch returns x above it ->
  Where(x > threshold, x, Softplus(x));
* ``scatter_reduction``: ScatterElements / ScatterND without reduction overwrite duplicate
  indices; ``scatter_add`` and ``index_put(accumulate=True)`` add -> reduction="add" (opset >= 16,
  the graph is converted when older);
* ``avgpool_divisor``: the exporters drop ``divisor_override`` -> AveragePool (pads counted) times
  kernel area / divisor;
* ``resize_antialias``: a downsampling Resize without antialias where the torch call antialiases
  -> antialias=1 (opset >= 18, converted when older);
* ``resize_gather_patches``: a nearest Resize whose source pixels are one off (ORT's float32
  division for sizes like 26 -> 64, or the spec's rounding of a ``scale_factor``) -> Gathers on
  the indices torch computes (the edit: ``resize_gather.py``);
* ``log1p`` / ``expm1``: ``Log(1 + x)`` / ``Exp(x) - 1`` (how the exporters lower them) lose the
  low bits of a small x -> the accurate forms (the edits: ``stable_edits.py``);
* ``logaddexp``: ``Log(Exp(a) + Exp(b))`` (the dynamo exporter's lowering) overflows -> the stable
  ``max(a, b) + Log(1 + Exp(-|a - b|))`` (``stable_edits.py``).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Optional

import numpy as np
import onnx

from drifttui.core.base.dtypes import INT_ELEMS, ONNX_ELEM, SCALAR_FLOAT_ELEMS
from drifttui.core.onnx.graph import attribute_values as _attrs

from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.locate.fx_localise import fx_of, fx_reads, fx_scalars
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.rewriting import input_dtype, static_value
from drifttui.core.onnx.edit.lowerings.resize_gather import OPS as RESIZE_OPS, UPSTREAM, torch_indices, torch_rule
from drifttui.core.onnx.edit.lowerings.stable_forms import match_expm1, match_log1p, match_logaddexp, naive_nodes
from drifttui.core.onnx.edit.lowerings.ort_workarounds import forms_for

STABILITY = "stability"     # a numerically unstable lowering: a stable form of the same function verifies


def _patch(node: Any, rewrite: str, check: str, why: str, fix: str, module: str, nodes: Optional[list[str]] = None,
           **extra: Any) -> Any:
    return Patch({"op": "rewrite", "node": node.name, "rewrite": rewrite, **extra}, check, why, fix, "export",
                 module=module, nodes=nodes or [node.name])


def _modules(module: Any) -> list[Any]:
    return list(module.modules()) if module is not None else []


def _find(module: Any, cls: str) -> Optional[Any]:
    return next((m for m in _modules(module) if type(m).__name__ == cls), None)


def floor_cast(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    to = int(_attrs(node).get("to", 0))
    if to in INT_ELEMS and types.get(node.input[0]) in SCALAR_FLOAT_ELEMS:
        yield _patch(node, "floor_cast", "dtype",
                     f"Cast {node.name} to {ONNX_ELEM.get(to, 'an integer')} truncates towards zero where torch floors "
                     "(a float floor_divide or // lowered to Div + Cast)",
                     "export with the dynamo exporter (it lowers floor_divide to Floor), or write "
                     "torch.floor(a / b) in the forward", case.module)


def softplus_threshold(case: Any, node: Any, module: Any, types: dict[str, int],
                       calls: Optional[list[list[Optional[float]]]] = None) -> Iterator[Any]:
    """``calls``: the torch program's aten.softplus arguments (fx_localise.torch_calls), for a
    functional F.softplus in a file without FX metadata."""
    sp = _find(module, "Softplus")
    threshold = float(getattr(sp, "threshold", 20.0))
    beta = float(getattr(sp, "beta", 1.0))
    fx = fx_of(node)
    args: list[Optional[float]] = []
    if sp is None and fx is not None and fx[1].startswith("aten.softplus"):
        args = fx_scalars(node)          # a dynamo file records the call: aten.softplus(x, beta, threshold)
    elif sp is None and calls:
        k = [n.name for n in case.model.graph.node if n.op_type == "Softplus"].index(node.name)
        args = calls[min(k, len(calls) - 1)]
    args = list(args) + [None, None, None]
    beta, threshold = args[1] if args[1] is not None else beta, args[2] if args[2] is not None else threshold
    yield _patch(node, "softplus_threshold", "op-compat",
                 f"Softplus {node.name}: the threshold is missing (torch returns x where beta*x > {threshold:g}; "
                 "ONNX Softplus has no threshold)",
                 "export with the dynamo exporter (it keeps the threshold as a Where), or let `drifttui repair` "
                 "add it", case.module, threshold=threshold, beta=beta)


def scatter_reduction(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    if _attrs(node).get("reduction", "none") != "none":
        return
    opset = case.opset or 11
    op = "ScatterElements" if node.op_type == "Scatter" else node.op_type
    # the opset story only where the file is older than the attribute: at 16 and later the exporter left it out
    fix = (f"export with opset >= 16 (reduction='add' on {op}); the file is at opset {opset}" if opset < 16 else
           f"the file is at opset {opset}, where {op} has reduction='add', and the exporter left it out: export "
           "with the dynamo exporter (it sets the reduction), or let `drifttui repair` add it")
    yield _patch(node, "scatter_reduction", "op-compat",
                 f"{node.op_type} {node.name} has no reduction: duplicate indices overwrite instead of adding "
                 "(torch's scatter_add, index_add and index_put(accumulate=True) add them)", fix, case.module,
                 reduction="add")


def avgpool_divisor(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    pools = [m for m in _modules(module) if getattr(m, "divisor_override", None)]
    if len(pools) != 1:
        return
    d = int(pools[0].divisor_override)
    area = math.prod(_attrs(node).get("kernel_shape", [1]))
    if area != d:
        yield _patch(node, "avgpool_divisor", "padding",
                     f"AveragePool {node.name} divides by the window ({area}); torch's divisor_override divides "
                     f"by {d} (the exporters drop divisor_override)",
                     f"compute the pool as avg_pool * ({area} / {d}) in the forward (ONNX AveragePool has no "
                     "divisor), or let `drifttui repair` rewrite the node", case.module, divisor=d, area=area)


def resize_antialias(case: Any, node: Any, module: Any, types: dict[str, int],
                     calls: Optional[Callable[[str], Any]] = None) -> Iterator[Any]:
    """The antialias story only where torch downsamples with antialias=True: the Resize makes an axis
    smaller, and the module says antialias=True or the torch program calls an ``_aa`` upsample (a
    program whose upsample calls are all without it refutes the story before any patch runs)."""
    a = _attrs(node)
    if a.get("antialias", 0) or a.get("mode", "nearest") == "nearest":
        return
    want = getattr(module, "antialias", None)
    if want is False:
        return
    shapes = _resize_shapes(case, node)
    if shapes is None or not any(o < i for i, o in zip(shapes[0][2:], shapes[1][2:])):
        return                          # not a downsample: antialias changes nothing
    if want is None and calls is not None:
        aa = [c for k in ("aten._upsample_bilinear2d_aa", "aten._upsample_bicubic2d_aa") for c in calls(k)]
        plain = [c for k in ("aten.upsample_", "aten._upsample_nearest") for c in calls(k)]
        if plain and not aa:
            return
    yield _patch(node, "resize_antialias", "interpolation",
                 f"Resize {node.name} does not antialias; the torch interpolate call downsamples with "
                 "antialias=True", "export with opset >= 18 (Resize has antialias since opset 18)"
                 + (f"; the file is at opset {case.opset}" if (case.opset or 18) < 18 else ""), case.module)


#: the source change for a lowering ONNX has no accurate op for (log1p, expm1): the upstream issue, with its case
LOWERING_REPORT = ("the exporter's lowering is the cause: report it to torch.onnx (pytorch/pytorch#24808) with the case "
            "`drifttui repro` writes")


def log1p(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    if match_log1p(case.model, node) is not None:
        yield _patch(node, "log1p", STABILITY,
                     f"Log {node.name} computes log1p as Log(1 + x): the float sum 1 + x drops the low bits of x "
                     "for |x| << 1 (the exporters lower torch.log1p to Add + Log; ONNX has no Log1p), where torch's "
                     "log1p is exact; the accurate form x * Log(1 + x) / ((1 + x) - 1) computes what torch computes",
                     "let `drifttui repair` write the accurate form, or scale the argument away from 0 in the forward; "
                     f"{LOWERING_REPORT}",
                     case.module, naive_nodes(case.model, node, "log1p"))


def logaddexp(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    if match_logaddexp(case.model, node) is not None:
        yield _patch(node, "logaddexp", STABILITY,
                     f"Log {node.name} computes logaddexp as Log(Exp(a) + Exp(b)): Exp overflows to inf above ~88 "
                     "(and underflows to 0 below ~-103) where torch's logaddexp computes "
                     "max(a, b) + log1p(exp(-|a - b|)) (the dynamo exporter lowers torch.logaddexp to Exp + Add + "
                     "Log; ONNX has no LogAddExp); that form computes what torch computes",
                     "let `drifttui repair` write the stable form, or write "
                     "torch.maximum(a, b) + torch.log1p(torch.exp(-(a - b).abs())) in the forward", case.module,
                     naive_nodes(case.model, node, "logaddexp"))


def _log(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    yield from log1p(case, node, module, types)
    yield from logaddexp(case, node, module, types)


def expm1(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    if match_expm1(case.model, node) is not None:
        yield _patch(node, "expm1", STABILITY,
                     f"Sub {node.name} computes expm1 as Exp(x) - 1: the difference cancels the low bits for "
                     "|x| << 1 (the dynamo exporter lowers torch.expm1 to Exp + Sub; ONNX has no Expm1), where "
                     "torch's expm1 is exact; the accurate form (Exp(x) - 1) * x / Log(Exp(x)) computes what "
                     "torch computes", f"let `drifttui repair` write the accurate form; {LOWERING_REPORT}", case.module,
                     naive_nodes(case.model, node, "expm1"))


def elu_expm1(case: Any, node: Any, module: Any, types: dict[str, int]) -> Iterator[Any]:
    z = "x / alpha" if node.op_type == "Celu" else "x"
    yield Patch({"op": "rewrite", "node": node.name, "rewrite": "elu_expm1"}, STABILITY,
                 f"{node.op_type} {node.name}: ONNX Runtime's {node.op_type} kernel computes exp({z}) - 1 in float32 "
                 f"for x <= 0, which cancels the low bits where |{z}| << 1 (and the factor it is multiplied by scales "
                 "that loss up), where torch's kernel calls expm1; the same formula with the accurate form "
                 "(Exp(z) - 1) * z / Log(Exp(z)) computes what torch computes",
                 "let `drifttui repair` write the accurate form, or keep the argument of exp away from 0 (for "
                 "celu: an alpha of modest size); report the kernel to onnxruntime with `drifttui repro`",
                 "runtime", module=case.module, nodes=[node.name])


CANDIDATES: dict[str, Callable[..., Iterator[Any]]] = {
    "Cast": floor_cast, "Softplus": softplus_threshold, "ScatterElements": scatter_reduction,
    "ScatterND": scatter_reduction, "Scatter": scatter_reduction, "AveragePool": avgpool_divisor, "Resize": resize_antialias,
    "Log": _log, "Sub": expm1, "Elu": elu_expm1, "Celu": elu_expm1, "Selu": elu_expm1}


def candidates(case: Any, module: Any, types: dict[str, int], calls: Optional[Callable[[str], Any]] = None) -> list[Any]:
    """``calls(prefix)``: the torch program's calls of that target (fx_localise.torch_calls)."""
    out: list[Any] = []
    for node in case.model.graph.node:
        fn = CANDIDATES.get(node.op_type)
        if fn is softplus_threshold:
            out.extend(fn(case, node, module, types, calls("aten.softplus") if calls is not None else None))
        elif fn is resize_antialias:
            out.extend(fn(case, node, module, types, calls))
        elif fn is not None:
            out.extend(fn(case, node, module, types))
    return out


def _precision(model: Any, value: str) -> str:
    """The float type a value is computed in (``float16`` in a half model), for a story."""
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - the graph's own annotations, else float32
        pass
    return np.dtype(input_dtype(model, value)).name


def workaround_patches(case: Any, first: Any = None, kind: str = "runtime",
                       calls: Optional[dict[str, Any]] = None) -> list[Any]:
    """Every catalogue rewrite that fits a node of the case, the deviating node's first.  ``kind``
    ``export`` (the reference evaluator drifts too: the exporter's lowering, e.g. ``F.logsigmoid`` as
    ``Log(Sigmoid(x))``, underflows in float32 where torch's kernel does not) words it as the graph's
    fault; else the bug is ONNX Runtime's, unless the rewrite keeps the node and replaces what reads it and both
    are one torch call's lowering (``F.logsigmoid`` as ``Log(Sigmoid(x))``: torch's kernel is stable, the file's
    composite amplifies its Sigmoid's rounding, ``stability``).  Where the node and its reader are torch calls of
    their own (``torch.log(torch.sigmoid(x))``), torch computes the same composite: the kernel is the difference.
    ``calls``: ONNX node -> the torch call it computes (torch_align), for files without FX records."""
    nodes = sorted(case.model.graph.node, key=lambda n: n.name != first)
    out = []
    for node in nodes:
        for w in forms_for(node):
            drop = _replaced(case.model, node, w)
            if not drop:        # the rewrite does not fit here (no Log reads the Sigmoid)
                continue
            composite = kind != "export" and _one_call_composite(node, drop, calls or {})
            if kind == "export" or composite:
                how = (f"as the exporter lowered it loses precision in {_precision(case.model, node.input[0])} (the "
                       "ONNX reference implementation computes the same as ONNX Runtime, where torch's kernel does "
                       "not)") if not composite else \
                    (f"and the node reading it, one torch call's lowering, are an unstable composite: ONNX Runtime's "
                     f"{node.op_type} rounds its tail otherwise than the ONNX reference implementation (which "
                     f"computes what torch computes) and the reader turns that into the drift")
                why = f"{node.op_type} {node.name} {how}; the equivalent {w.what} computes what torch computes"
                fix = f"deploy the rewritten graph ({w.what}; `drifttui repair` applies it)"
            else:
                why = (f"ONNX Runtime's {node.op_type} kernel is wrong at {node.name} (the ONNX reference "
                       f"implementation computes what torch computes): the bug is in ONNX Runtime; the "
                       f"equivalent {w.what} computes what torch computes")
                fix = (f"deploy the rewritten graph ({w.what}; `drifttui repair` applies it) and report the "
                       f"{node.op_type} kernel to onnxruntime with `drifttui repro`")
            stable = kind == "export" or composite
            out.append(Patch({"op": "rewrite", "node": node.name, "rewrite": "workaround", "form": w.form},
                             STABILITY if stable else "op-compat", why, fix, "export" if stable else "runtime",
                             module=case.module, nodes=[node.name, *(d.name for d in drop if d is not node)]))
    return out + _every_site(out)


def _every_site(singles: list[Any]) -> list[Any]:
    """Per workaround form that fits two or more nodes apart, one patch at all of them, after the single ones: a
    lowering that repeats the composite (``multilabel_soft_margin_loss``: ``Log(Sigmoid(x))`` and
    ``Log(Sigmoid(-x))``) underflows at each, and no site alone removes the drift."""
    forms: dict[str, list[Any]] = {}
    for p in singles:
        forms.setdefault(p.spec["form"], []).append(p)
    out = []
    for ps in forms.values():
        sites: list[Any] = []
        for p in ps:
            if all(set(p.nodes).isdisjoint(q.nodes) for q in sites):
                sites.append(p)
        if len(sites) < 2:
            continue
        first = sites[0]
        where = ", ".join(p.spec["node"] for p in sites)
        out.append(Patch({"op": "sequence", "patches": [p.spec for p in sites]}, first.check,
                         f"{first.why} (the same rewrite at all {len(sites)} nodes it fits: {where})", first.fix,
                         first.kind, module=first.module, nodes=[n for p in sites for n in p.nodes]))
    return out


def _replaced(model: Any, node: Any, w: Any) -> list[Any]:
    """The nodes the workaround ``w`` at ``node`` replaces ([] when it does not fit here)."""
    try:
        drop, _, _ = w.build(model, node, np.float32, f"{node.name}/probe")
    except Exception:  # noqa: BLE001 - a rewrite that does not fit here replaces nothing
        return []
    return list(drop)


def _one_call_composite(node: Any, drop: list[Any], calls: dict[str, Any]) -> bool:
    """The rewrite keeps ``node`` and replaces the nodes that read it, and nothing says those are another torch
    call than ``node``'s (the FX record, else the call aligned by value), or the reader's torch call does not read
    ``node``'s: the exporter's optimiser shared ``node`` between two calls (``torch.sigmoid(x)`` and
    ``log_sigmoid(x)``'s lowering ``Log(Sigmoid(x))``), and the reader is one call's lowering, not torch's
    composite."""
    if not drop or any(d is node for d in drop):
        return False
    mine = fx_of(node) or calls.get(node.name)
    return mine is None or all((fx_of(d) or calls.get(d.name)) == mine or _shared(node, d) for d in drop)


def _shared(node: Any, reader: Any) -> bool:
    """``reader``'s FX node does not take ``node``'s FX value: in torch the reader's call does not read it."""
    mine, theirs = fx_of(node), fx_of(reader)
    return mine is not None and theirs is not None and not fx_reads(reader, mine[0])


def _resize_shapes(case: Any, node: Any) -> Optional[tuple[list[int], list[int], Optional[list[float]]]]:
    """The Resize's input and output shapes on the case, and its scales when the file holds them."""
    scale_in = node.input[1] if node.op_type == "Upsample" or (case.opset or 11) < 11 else \
        (node.input[2] if len(node.input) > 2 else "")
    known = {v: a for v in (node.input[0], node.output[0], scale_in) if v
             for a in [case.feeds.get(v, static_value(case.model, v))] if a is not None}
    try:
        vals = {**known, **run_ort(case.model, case.feeds, [v for v in (node.input[0], node.output[0], scale_in)
                                                            if v and v not in known])}
    except Exception:  # noqa: BLE001 - no shapes, no patch
        return None
    x, y = np.asarray(vals.get(node.input[0])), np.asarray(vals.get(node.output[0]))
    if x.ndim != y.ndim or x.ndim == 0:
        return None
    s = np.asarray(vals.get(scale_in, []), dtype=np.float64).ravel() if scale_in else np.zeros(0)
    scales = [float(v) if v != 1.0 else None for v in s] if s.size == x.ndim else None
    return list(x.shape), list(y.shape), scales


def _resize_why(node: Any, rule: str, kind: str, file_scale: bool) -> str:
    torch_does = ("floor((dst + 0.5) * in/out)" if rule == "nearest-exact" else "floor(dst * in/out)")
    gathers = f"the equivalent Gathers on the source indices torch computes ({torch_does}, clamped)"
    if kind == "runtime":
        return (f"ONNX Runtime's Resize kernel picks a source pixel one off at {node.name} (nearest: it divides "
                f"by the float32 scale out/in where torch multiplies by in/out; the ONNX reference implementation "
                f"computes what torch computes): the bug is in ONNX Runtime (upstream {UPSTREAM}); {gathers} "
                "compute what torch computes")
    src = "the file's float32 scale" if file_scale else "out/in"
    if kind != "export":            # the reference evaluator could not run the node: not measured who rounds so
        return (f"{node.op_type} {node.name} (nearest) picks a source pixel one off: ONNX computes the source index "
                f"as dst / scale with {src}, torch's interpolate as {torch_does} in float32 (the ONNX reference "
                f"implementation could not run the node, so whether ONNX Runtime or the spec rounds so is not "
                f"measured); {gathers} compute what torch computes")
    return (f"Resize {node.name} (nearest) picks the source index dst / scale with {src} as the ONNX spec says, "
            f"where torch's interpolate computes {torch_does} in float32: the roundings differ and some pixels "
            f"are one off (no Resize attribute reproduces torch's indices); {gathers} compute what torch computes")


def resize_gather_patches(case: Any, kind: str, dynamic: bool = False) -> list[Patch]:
    """The Gather rewrite of every nearest Resize of the case, in each variant whose indices differ:
    torch's scale from the file's scales (a ``scale_factor`` call) and from the sizes, with and
    without the 2-D kernel's shortcuts (that kernel's first)."""
    out: list[Patch] = []
    for node in case.model.graph.node:
        rule = torch_rule(node) if node.op_type in RESIZE_OPS else None
        shapes = _resize_shapes(case, node) if rule else None
        if shapes is None:
            continue
        ins, outs, scales = shapes
        seen: set[bytes] = set()
        for sc in ([scales] if scales else []) + [None]:
            for cut in (len(ins) == 4, len(ins) != 4):
                idx = b"|".join(torch_indices(i, o, rule, (sc or [None] * len(ins))[a], cut).tobytes()
                                for a, (i, o) in enumerate(zip(ins, outs)))
                if idx in seen:
                    continue
                seen.add(idx)
                out.append(_resize_patch(case, node, rule, kind, ins, outs, sc, cut, scales is not None, dynamic))
    return out


def _resize_patch(case: Any, node: Any, rule: str, kind: str, ins: list[int], outs: list[int],
                  sc: Optional[list[Any]], cut: bool, file_scale: bool, dynamic: bool = False) -> Patch:
    k = "runtime" if kind == "runtime" else "export"
    sizes = ", ".join(f"{i} -> {o}" for i, o in zip(ins, outs) if i != o)
    shapes = ("the file has dynamic input dims: the indices are computed in the graph from the runtime shape, "
              f"as torch computes them (measured at {sizes})" if dynamic else f"static shapes {ins} -> {outs}")
    fix = ("deploy the rewritten graph (`drifttui repair` replaces the Resize with Gathers on torch's "
           f"indices; {shapes})" +
           (f" and report the Resize kernel to onnxruntime with `drifttui repro` ({UPSTREAM})" if k == "runtime"
            else "; an integer scale, or mode='nearest-exact' exported by the dynamo exporter (it lowers that "
                 "to Gathers), avoids the Resize's rounding"))
    return Patch({"op": "rewrite", "node": node.name, "rewrite": "resize_gather", "rule": rule, "in_shape": ins,
                  "out_shape": outs, "scales": sc, "shortcut": cut, **({"dynamic": True} if dynamic else {})},
                 "interpolation", _resize_why(node, rule, kind, file_scale), fix, k, module=case.module, nodes=[node.name])
