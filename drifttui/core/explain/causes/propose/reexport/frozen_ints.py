"""Integers a TorchScript trace took from the example's sizes, in a file that declares those dims dynamic.

A trace records the ints a symbolic reads (``torch.roll``'s shift, a ``narrow``'s length, an ``int(x.size(1) * 0.8)``)
as constants: a ``Slice``'s bounds, a ``Pad``'s amounts.  Which of the origin's integer constants are sizes is told
by tracing, not by reading the code: the origin module traced again by the file's exporter (with the file's dynamic
dims) on samples of three or more sizes; a constant whose value changes with the size of a dynamic dim and fits
``s * ((a * d + r) // q) + b`` on every trace (``a`` up to 4, ``q`` up to 8) is a size frozen at the example's value,
and the patch computes it from the runtime shape (``rewrite: runtime_int``, ``onnx/edit/lowerings/runtime_int.py``).
It verifies only where it computes torch's values on this sample and on fresh samples of other sizes (``holds.py``).
Class ``dynamic-axes``: a size baked in at export time.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import Case, call_io, fresh_indices, origin_case
from drifttui.core.explain.causes.propose.reexport.frozen_trace import _feed_of, dynamic_dims
from drifttui.core.explain.causes.propose.reexport.variants import _export, _plain, _traced
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.weights import read_tensor
from drifttui.core.prepare.reference import run_exporter

Export = Callable[[Any, list[Any]], Any]          # (module, inputs) -> the file's exporter's trace
DIVISORS = range(1, 9)
FACTORS = range(1, 5)
MOST = 8                                          # elements of a constant looked at
MOST_NODES = 400                                  # origins traced again at other sizes up to this many nodes


def _int_constants(model: Any) -> dict[str, np.ndarray]:
    out = {t.name: read_tensor(t) for t in model.graph.initializer if np.prod(t.dims) <= MOST}
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value" and np.prod(a.t.dims) <= MOST:
                    out[n.output[0]] = read_tensor(a.t)
    return {k: v for k, v in out.items() if v.dtype.kind in "iu" and v.size}


def _slots(model: Any) -> list[tuple[Any, int, np.ndarray]]:
    """(node, input position, values) of each integer constant a computing node reads, in node order."""
    consts = _int_constants(model)
    return [(n, j, consts[v]) for n in model.graph.node if n.op_type != "Constant"
            for j, v in enumerate(n.input) if v in consts]


def _aligned(case_slots: list, trace_slots: list) -> Optional[list[np.ndarray]]:
    """The trace's values of each of the case's slots, matched in order by op type, input position and shape (the
    trace also holds the child modules' nodes the case leaves out); None when one has no match."""
    out, at = [], 0
    for node, j, vals in case_slots:
        while at < len(trace_slots) and not (trace_slots[at][0].op_type == node.op_type and trace_slots[at][1] == j
                                             and trace_slots[at][2].shape == vals.shape):
            at += 1
        if at == len(trace_slots):
            return None
        out.append(trace_slots[at][2])
        at += 1
    return out


def _fit(points: list[tuple[int, int]]) -> Optional[tuple[int, int, int, int, int]]:
    """(s, a, r, q, b) with v = s * ((a * d + r) // q) + b at every (d, v), the simplest first (``d // 2``,
    ``(d + 3) // 4`` = ceil(d / 4), ``(4 * d) // 5`` = int(0.8 * d)); a floor needs three sizes, a line two."""
    for q in DIVISORS:
        if q > 1 and len(points) < 3:
            break
        for a in FACTORS:
            for r in range(q):
                for s in (1, -1):
                    d0, v0 = points[0]
                    b = v0 - s * ((a * d0 + r) // q)
                    if all(v == s * ((a * d + r) // q) + b for d, v in points):
                        return s, a, r, q, b
    return None


def frozen_int_patches(ctx: Any, case: Case, module: Any, ins: list[Any], dims: list[list[int]],
                       export: Export) -> list[Patch]:
    """``runtime_int`` patches for the case's integer constants that the traces at several sizes show to be sizes."""
    mine = _slots(case.model)
    if not mine or len(case.model.graph.node) > MOST_NODES:     # no integer constant, or an origin too big to trace
        return []                                                # again at each size for one
    cm = ctx.plan.calls[case.call]
    inputs = {i: cm.inputs.get(i) or _feed_of(case, t) for i, t in enumerate(ins)}
    samples = [(ins, case.feeds)]
    for k in fresh_indices(ctx):
        other = origin_case(ctx, sample=k)
        io = call_io(ctx, other) if other is not None else None
        if io is not None:
            samples.append((list(io[0]), other.feeds))
    sized = [(i, a) for i, axes in enumerate(dims) for a in axes if inputs.get(i)]
    traces = []
    for s_ins, _ in samples:
        try:
            traces.append((s_ins, _slots(export(module, s_ins))))
        except Exception:  # noqa: BLE001 - a module that does not trace alone at that size: fewer points
            continue
    values = [(s_ins, _aligned(mine, slots)) for s_ins, slots in traces]
    values = [(s_ins, v) for s_ins, v in values if v is not None]
    if len(values) < 2:
        return []
    out = []
    for m, (node, pos, baked) in enumerate(mine):
        elements = []
        for k in range(baked.size):
            seen = [int(v[m].ravel()[k]) for _, v in values]
            if len(set(seen)) < 2:
                continue
            for i, axis in sized:
                points = sorted({(int(s_ins[i].shape[axis]), v) for (s_ins, _), v in zip(values, seen)})
                form = _fit(points) if len({d for d, _ in points}) == len(points) else None
                if form is not None and int(baked.ravel()[k]) != seen[0]:
                    s, a, r, q, b = form
                    elements.append({"k": k, "input": inputs[i], "axis": axis, "s": s, "a": a, "r": r, "q": q,
                                     "b": b})
                    break
        if elements:
            out.append(_patch(case, node, node.input[pos], baked, elements, values[0][1][m]))
    if len(out) > 1:        # one size read by several nodes (a roll's two slices): all of them at once first
        first = out[0]
        out.insert(0, Patch({"op": "sequence", "patches": [p.spec for p in out], "baked": first.spec["baked"]},
                            "dynamic-axes", f"{first.why}; and {len(out) - 1} more constant(s) of the same trace "
                            "follow that size", first.fix, "export", module=case.module,
                            nodes=[n for p in out for n in p.nodes]))
    return out


def _form(e: dict) -> str:
    d = "d" if e["a"] == 1 else f"{e['a']} * d"
    d = d if e["r"] == 0 else f"({d} + {e['r']})"
    core = d if e["q"] == 1 else f"{d} // {e['q']}"
    core = core if e["s"] == 1 else f"-({core})"
    return core + (f" + {e['b']}" if e["b"] > 0 else f" - {-e['b']}" if e["b"] < 0 else "")


def _patch(case: Case, node: Any, name: str, baked: np.ndarray, elements: list[dict], here: np.ndarray) -> Patch:
    e = elements[0]
    return Patch({"op": "rewrite", "node": node.name, "rewrite": "runtime_int", "name": name, "elements": elements,
                  "baked": baked.ravel().tolist(), "runtime": here.ravel().tolist()},
                 "dynamic-axes",
                 f"{node.op_type} {node.name} reads {name} = {baked.ravel().tolist()}, integers the trace took from the "
                 f"example's size of {e['input']} dim {e['axis']}, which the file declares dynamic: traced again at "
                 f"other sizes the element(s) follow {_form(e)} of that size (here {here.ravel().tolist()}), so the "
                 "file computes every other size with the example's numbers",
                 "compute the int with the size kept a tensor inside torch ops (a symbolic that reads an int, such as "
                 "torch.roll's shift, freezes it: write the roll as two slices of x.size(1) - k, or export with the "
                 "dynamo exporter); `drifttui repair` computes it from the runtime shape in the file", "export",
                 module=case.module, nodes=[node.name])


def traced_int_patches(ctx: Any, case: Case) -> list[Patch]:
    """``frozen_int_patches`` of the origin, for a TorchScript file that declares a dim of the origin's inputs
    dynamic (the dynamo exporter keeps a size symbolic or specialises the dim: no int of a dynamic dim is frozen)."""
    if run_exporter(ctx.index, ctx.cfg) != "torchscript" or not ctx.index.has_dynamic_inputs:
        return []
    module = ctx.modules().get(case.module)
    io = call_io(ctx, case)
    if module is None or io is None:
        return []
    ins = _plain(io[0])
    dims = dynamic_dims(ctx, case, ins)
    if not any(dims):
        return []
    module = as_called(ctx, case.call, module, ctx.sample(case.sample))
    return frozen_int_patches(ctx, case, module, ins, dims, lambda m, i: _export(m, i, _traced(ctx), dims))
