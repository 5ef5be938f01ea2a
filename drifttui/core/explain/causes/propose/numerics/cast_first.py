"""The cast-first counterfactual: an op the file computes in a narrow float type and then widens with a Cast,
computed in the Cast's type instead (issue 30 point 2; a generic patch from the graph, no catalogue entry).

torch's ``dtype=`` argument (``softmax``, ``log_softmax``, ``softmin``, ``mean``, ``sum``, ``cumsum``, ...) casts
the *input* before the op; both exporters lower ``softmax`` / ``log_softmax`` with ``dtype`` as the op in the
input's type followed by a Cast of its result (TorchScript's symbolic, torchlib's ``aten_softmax``,
``aten_special_log_softmax``, ``aten_mean_dim``: ``op.Cast(result, to=dtype)``), so a float32 result holds
float16 roundings (microsoft/onnxruntime#20057, pytorch/pytorch#153393).  For every Cast of the origin that
widens a float value (float16 / bfloat16 -> float32 / float64, float32 -> float64) made by a computing node of
the origin, one patch moves the widening before that node (``onnx/edit/numerics/cast_first.py``).  Nothing is assumed
about which op or which exporter: the patch verifies only where the file's narrow computation is the drift.
Class ``dtype`` (where precision was lost), kind ``export``; ``repair`` applies it.

The narrowing direction (``narrowing_patches``): ``special_log_softmax(x, -1, dtype=torch.float16)`` of a float32
``x`` casts ``x`` to float16 first, where both exporters compute ``LogSoftmax`` in float32 and narrow its result
(``Cast(LogSoftmax(x), to=float16)``): the file's result is torch's op on the unrounded input, rounded once.  For
every Cast of the origin that narrows a float value made by a computing node all of whose readers are narrowing
Casts, one patch reads that node's float inputs of its own type rounded to the Cast's type first (``round_first``).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from onnx import helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.patches import Patch

RANK = {16: 0, 10: 1, 1: 2, 11: 3}             # bfloat16 < float16 < float32 < float64 (mantissa bits)
NAMES = {16: "bfloat16", 10: "float16", 1: "float32", 11: "float64"}
# ops that move or select elements: computing them in another type changes no value
MOVING = ("Cast", "CastLike", "Constant", "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
          "Concat", "Slice", "Gather", "GatherElements", "Expand", "Split", "Tile", "Pad", "If", "Loop", "Scan")
UPSTREAM = "microsoft/onnxruntime#20057, pytorch/pytorch#153393"
LIMIT = 4                                      # patches per origin


def _elem(a: Any) -> int:
    return int(helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype))


def _story(node: Any, narrow: int, to: int, op: Optional[str]) -> tuple[str, str]:
    lo, hi = NAMES[narrow], NAMES[to]
    called = f" ({op})" if op else ""
    why = (f"{node.op_type} {node.name} computes in {lo} and its result is then Cast to {hi}: the file applies the "
           f"{hi} type after the op, where torch{called} computes it in {hi}; with the Cast moved before "
           f"{node.op_type} the file computes what torch computes (a `dtype=` argument is lowered this way: "
           f"{UPSTREAM})")
    fix = (f"cast the input yourself before the call (`x.to(torch.{hi})` then the op; where the call takes "
           f"`dtype=torch.{hi}`, instead of it), or deploy the file with {node.op_type} computed in {hi} "
           f"(`drifttui repair` moves the Cast); report the lowering with `drifttui repro`")
    return why, fix


def _sets(node: Any, made: dict[str, Any], case: Case, types: dict[str, int], narrow: int) -> list[list[Any]]:
    """The op alone, then the op with the narrow computing nodes that feed only the set, up to an explicit Cast
    (ONNX Runtime computes those in float32 and may drop an inserted rounding the widened op would read; the patch
    rounds their outputs explicitly, as torch rounds each float16 op)."""
    readers: dict[str, list[Any]] = {}
    for n in case.model.graph.node:
        for v in n.input:
            readers.setdefault(v, []).append(n)
    chain, todo = [node], list(node.input)
    while todo and len(chain) < 8:
        v = todo.pop()
        p = made.get(v)
        if p is None or p in chain or p.op_type in ("Cast", "Constant") or types.get(v) != narrow \
                or any(r not in chain for r in readers.get(v, [])) or len(p.output) != 1 or not p.name:
            continue
        chain.append(p)
        todo.extend(p.input)
    return [[node]] + ([chain] if len(chain) > 1 else [])


def _narrowing_story(node: Any, wide: int, narrow: int) -> tuple[str, str]:
    """The story without the localisation's torch op: that is the first wrong call by value, which may be the
    conversion after the op (``.to``); the conclusion opens the message with the call the patched op computes."""
    lo, hi = NAMES[narrow], NAMES[wide]
    why = (f"{node.op_type} {node.name} computes in {hi} and its result is then Cast to {lo}: torch casts "
           f"the input to {lo} before the op (a `dtype=` argument applies to the input) and computes on the rounded "
           f"values; with {node.op_type}'s input rounded to {lo} first the file computes what torch computes")
    fix = (f"cast the input yourself before the call (`x.to(torch.{lo})` then the op, without `dtype=`), or deploy the "
           f"file with {node.op_type}'s input rounded to {lo} (`drifttui repair` applies it); report the lowering "
           f"with `drifttui repro`")
    return why, fix


def _narrows(node: Any, wide: int) -> bool:
    to = next((a.i for a in node.attribute if a.name == "to"), None) if node.op_type == "Cast" else None
    return to in RANK and RANK[to] < RANK[wide]


def narrowing_patches(case: Case) -> list[Patch]:
    """One patch per Cast of the origin that narrows a float value a computing node makes in a wider float type
    and only narrowing Casts read (at most ``LIMIT``): that node's inputs of its own type rounded first."""
    casts, known = picked_values(case, lambda n: n.op_type == "Cast")
    made = {o: n for n in case.model.graph.node for o in n.output if o}
    types = {**{t.name: int(t.data_type) for t in case.model.graph.initializer},
             **{v: _elem(a) for v, a in known.items()}}
    readers: dict[str, list[Any]] = {}
    for n in case.model.graph.node:
        for v in n.input:
            readers.setdefault(v, []).append(n)
    out: list[Patch] = []
    for cast in casts:
        to, node = next((a.i for a in cast.attribute if a.name == "to"), None), made.get(cast.input[0])
        wide = types.get(cast.input[0])
        if to not in RANK or wide not in RANK or RANK[to] >= RANK[wide] or node is None \
                or node.op_type in MOVING or len(node.output) != 1 or not node.name \
                or not all(_narrows(r, wide) for r in readers.get(cast.input[0], [])):
            continue
        inputs = sorted({v for v in node.input if v and types.get(v) == wide})
        if inputs:
            why, fix = _narrowing_story(node, wide, to)
            spec = {"op": "rewrite", "rewrite": "round_first", "node": node.name, "cast": cast.name,
                    "narrow": int(to), "wide": int(wide), "inputs": inputs, "about": node.name}
            out.append(Patch(spec, "dtype", why, fix, "export", module=case.module, nodes=[node.name, cast.name]))
    return out[:LIMIT]


def cast_first_patches(case: Case, op: Optional[str] = None) -> list[Patch]:
    """One patch per widening Cast of the origin whose input a computing node of the origin makes in a narrower
    float type (at most ``LIMIT``); none when the case does not run.  ``op``: the torch op named by the
    localisation, for the story."""
    casts, known = picked_values(case, lambda n: n.op_type == "Cast")
    if not casts:
        return []
    made = {o: n for n in case.model.graph.node for o in n.output if o}
    stored = {t.name: int(t.data_type) for t in case.model.graph.initializer}
    types = {**stored, **{v: _elem(a) for v, a in known.items()}}
    out: list[Patch] = []
    for cast in casts:
        to = next((a.i for a in cast.attribute if a.name == "to"), None)
        node = made.get(cast.input[0]) if cast.input else None
        narrow = types.get(cast.input[0]) if cast.input else None
        if to not in RANK or narrow not in RANK or RANK[narrow] >= RANK[to] or node is None \
                or node.op_type in MOVING or len(node.output) != 1 or not node.name:
            continue
        for nodes in _sets(node, made, case, types, narrow):
            inside = {o for n in nodes for o in n.output if o}
            inputs = sorted({v for n in nodes for v in n.input if v and v not in inside and types.get(v) == narrow})
            if not inputs:
                continue
            why, fix = _story(node, narrow, to, op)
            spec = {"op": "rewrite", "rewrite": "cast_first", "node": node.name, "nodes": [n.name for n in nodes],
                    "cast": cast.name, "to": int(to), "narrow": int(narrow), "inputs": inputs,
                    "round": sorted(inside - set(node.output)), "about": node.name}
            out.append(Patch(spec, "dtype", why, fix, "export", module=case.module,
                             nodes=[n.name for n in nodes] + [cast.name]))
    return out[:LIMIT]
