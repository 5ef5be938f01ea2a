"""Drift class ``dynamic-axes``: input dims fixed in the graph, shape arithmetic baked into constants.

* an input dim fixed in the graph that differs from the real inputs: error;
* all input dims static: info (the file only runs at these shapes);
* dynamic inputs but Reshape/Expand/Tile/ConstantOfShape targets that are constants holding a
  concrete input dim: warning (Python ints from ``x.shape`` were traced into the graph).
"""
from __future__ import annotations

from typing import Any

from drifttui.core.onnx.graph import tensor_array
from drifttui.core.model.inputs import flatten
from drifttui.core.result import Finding
from drifttui.core.explain.context import Context, clean

CHECK = "dynamic-axes"
STATIC = True
_SHAPE_OPS = {"Reshape": 1, "Expand": 1, "Tile": 1, "ConstantOfShape": 0}


def check(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    index = ctx.index
    dims = {name: index.shapes.get(name, []) for name in index.graph_inputs}
    try:
        real = [tuple(t.shape) for t in flatten(ctx.sample(0))]
    except Exception:
        real = []
    for (name, d), r in zip(dims.items(), real):
        bad = [(k, a, b) for k, (a, b) in enumerate(zip(d, r)) if isinstance(a, int) and a != b]
        if bad or (d and len(d) != len(r)):
            out.append(Finding(CHECK, "error", None, [],
                               f"input {name} is fixed to {d} in the graph but the real input is {list(r)}",
                               clean({"input": name, "graph_dims": d, "real_dims": list(r)}),
                               "export with dynamic_shapes (dynamo) / dynamic_axes (torchscript) for the dims that vary"))
    dynamic = {name for name, d in dims.items() if any(not isinstance(x, int) for x in d)}
    if not dynamic:
        out.append(Finding(CHECK, "info", None, [],
                           "all input dims are static: the file runs only at "
                           + "; ".join(f"{n}={d}" for n, d in dims.items()),
                           clean({"inputs": dims}),
                           "export with dynamic_shapes if other batch sizes or lengths are deployed"))
        return out
    concrete = {x for name in dynamic for x in dims[name] if isinstance(x, int) and x > 1}
    real_dyn = {b for (name, d), r in zip(dims.items(), real) if name in dynamic
                for a, b in zip(d, r) if not isinstance(a, int) and b > 1}
    for node in index.nodes:
        pos = _SHAPE_OPS.get(node.op_type)
        if pos is None or pos >= len(node.inputs) or not index.is_static(node.inputs[pos]):
            continue
        arr = tensor_array(index, node.inputs[pos])
        if arr is None:
            continue
        vals: Any = [int(v) for v in arr.ravel().tolist()]
        hit = sorted(set(vals) & real_dyn - concrete)
        if hit:
            out.append(Finding(CHECK, "warning", ctx.node_module(node.index), [node.name],
                               f"{node.op_type} {node.name} has a constant target {vals} holding {hit}, the size of a "
                               "dynamic input dim: shape arithmetic was baked in",
                               clean({"node": node.name, "target": vals, "dynamic_dims": sorted(real_dyn)}),
                               "use -1 or tensor shape ops (x.size(0) kept symbolic) instead of Python ints"))
    return out
