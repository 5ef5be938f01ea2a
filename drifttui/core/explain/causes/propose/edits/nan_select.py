"""The generic patch for a selection op that skips NaN where torch propagates it (issue 30 point 2).

ONNX Runtime's ``MaxPool``, ``GlobalMaxPool``, ``ReduceMax``, ``ReduceMin``, ``ArgMax`` and ``ArgMin``
compare with ``>`` / ``<`` and so skip a NaN (microsoft/onnxruntime#10514 for ArgMax); torch's
``max_pool``, ``amax``, ``max(dim)``, ``argmax`` propagate it (a NaN window or row is NaN, ``argmax`` is
the NaN's index).  No export route changes a runtime kernel, but a graph-level counterfactual can:
make the op see NaN the way torch does (``onnx/edit/lowerings/nan_select.py``).  It is proposed only at a
selection node whose input holds NaN on the captured sample, and, where torch's own value of the node
is known (a dynamo file's FX values, or the case's output), only when torch's value differs from the
file's there (a NaN the file dropped, or another index); it is verified like any patch.

The class stays ``op-compat`` (it is the runtime's semantics), kind ``runtime``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.lowerings.nan_select import INDEX_OPS, SELECT_OPS
from drifttui.core.onnx.edit.patches import Patch

MAX_PATCHES = 4
UPSTREAM = "microsoft/onnxruntime#10514"
_TORCH = {"MaxPool": "max_pool / adaptive_max_pool", "GlobalMaxPool": "adaptive_max_pool / amax",
          "ReduceMax": "amax / max(dim)", "ReduceMin": "amin / min(dim)", "ArgMax": "argmax / max(dim)",
          "ArgMin": "argmin / min(dim)"}


def nan_select_patches(case: Case, loc: Any) -> list[Patch]:
    """The NaN-propagating rewrite of each selection node fed NaN whose torch value (where known) the
    file's does not match; none when no selection node is fed NaN."""
    selects, known = picked_values(case, lambda n: n.op_type in SELECT_OPS and n.input and n.output)
    if not selects:
        return []
    fx = getattr(loc, "fx", None) if loc is not None else None
    torch_vals = {**(fx.torch_values if fx is not None else {}), **case.expected}
    out = []
    for node in selects:
        x = known.get(node.input[0])
        if x is None or np.asarray(x).dtype.kind != "f" or not np.isnan(x).any():
            continue
        if not _torch_disagrees(node, torch_vals.get(node.output[0]), known.get(node.output[0])):
            continue
        out.append(_patch(case, node, _target(fx, node)))
        if len(out) >= MAX_PATCHES:
            break
    if len(out) > 1:        # the NaN reaches several of them (a max's values and indices): all at once
        out.append(_joint(case, out))
    return out


def _torch_disagrees(node: Any, want: Any, got: Any) -> bool:
    """torch's value of the node (None: unknown, then the verification decides) differs from the
    file's: a NaN the file dropped (value ops), another index (index ops)."""
    if want is None or got is None or np.shape(want) != np.shape(got):
        return True
    want, got = np.asarray(want), np.asarray(got)
    if node.op_type in INDEX_OPS:
        return bool((want != got).any())
    return bool((np.isnan(want) & ~np.isnan(got)).any()) if want.dtype.kind == "f" else False


def _target(fx: Any, node: Any) -> str:
    """The torch op the node lowers: the FX group's target (a dynamo file), else the usual one."""
    for g in (fx.groups if fx is not None else ()):
        if node.name in g.nodes:
            return g.target.split(".")[1] if g.target.startswith("aten.") else g.target
    return _TORCH[node.op_type]


def _joint(case: Case, singles: list[Patch]) -> Patch:
    nodes = [p.nodes[0] for p in singles]
    return Patch({"op": "rewrite", "rewrite": "nan_propagate", "node": nodes[0], "nodes": nodes}, "op-compat",
                 f"{len(nodes)} selection nodes ({', '.join(nodes)}) are fed NaN and ONNX Runtime's kernels skip it "
                 "(their comparisons are false for NaN) where torch propagates it (a NaN window or row is NaN, its "
                 "index the NaN's); with NaN propagated through each of them the file computes what torch computes",
                 singles[0].fix, "runtime", module=case.module, nodes=nodes)


def _patch(case: Case, node: Any, torch_op: str) -> Patch:
    index = node.op_type in INDEX_OPS
    what = ("gives the first NaN's index where the row holds one" if index
            else "gives NaN for every window or row that holds a NaN")
    form = ("Where(ReduceMax(IsNaN(x)) > 0, ArgMax(IsNaN(x)), ·)" if index
            else f"Where({node.op_type}(IsNaN(x)) > 0, NaN, ·)")
    return Patch({"op": "rewrite", "rewrite": "nan_propagate", "node": node.name}, "op-compat",
                 f"{node.op_type} {node.name} is fed NaN and ONNX Runtime's kernel skips it (its comparisons are "
                 f"false for NaN) where torch's {torch_op} propagates it: torch {what}; with NaN propagated "
                 f"({form}) the file computes what torch computes",
                 f"keep NaN away from the {torch_op} call in the model (`torch.nan_to_num(x)` or a mask before it), "
                 f"or let `drifttui repair` add the NaN propagation to the file; the kernel's NaN handling is "
                 f"ONNX Runtime's (upstream: {UPSTREAM})",
                 "runtime", module=case.module, nodes=[node.name])
