"""The integer wrap ONNX Runtime drops (issue 30 point 8, batch P): a Cast pair float -> int64 -> int32 merged.

torch's ``(t * 1e9).long().int()`` truncates to int64, then keeps the low 32 bits (a wrap modulo 2**32); the file
holds the same two Casts, and the ONNX reference implementation computes the wrap.  ONNX Runtime's
RemoveDuplicateCastTransformer merges them into one float -> int32 conversion (unless the int64 value is a graph
output: an observer effect, so the values localisation reads are right and the deployed session's are not), which
sends a value past the narrow type's range to INT_MIN instead of wrapping it (microsoft/onnxruntime#17953 rewrote
that transformer's precision rule; #13418 and #11994 are other pairs it merges).  No export route changes it (both
exporters write the two Casts); a graph counterfactual can: the wrap written out before the narrowing Cast
(``onnx/edit/lowerings/int_wrap.py``).  Proposed for each narrowing integer Cast of the origin that reads a Cast's output
holding values outside the narrow type's range on the case (none otherwise: then the wrap changes nothing);
verified like any patch, in the whole deployed file.

Its class is ``dtype``: an integer conversion computed as another conversion than the one the file holds.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.lowerings.int_wrap import narrowing, wrap
from drifttui.core.onnx.edit.patches import Patch

UPSTREAM = "microsoft/onnxruntime#17953"


def _to(node: Any) -> Any:
    return helper.tensor_dtype_to_np_dtype(next(a.i for a in node.attribute if a.name == "to"))


def _narrowing_casts(case: Case) -> list[tuple[Any, Any]]:
    """(Cast, the Cast it reads) for each Cast of the origin narrowing another Cast's integer output."""
    made = {o: n for n in case.model.graph.node if n.op_type == "Cast" for o in n.output}
    out = []
    for n in case.model.graph.node:
        first = made.get(n.input[0]) if n.op_type == "Cast" and n.input else None
        if first is not None and narrowing(_to(first), _to(n)):
            out.append((n, first))
    return out


def int_wrap_patches(case: Case) -> list[Patch]:
    """One patch per narrowing Cast whose input, on the case, holds values the narrowing wraps."""
    pairs = {n.name: first for n, first in _narrowing_casts(case)}
    casts, known = picked_values(case, lambda n: n.name in pairs)
    out = []
    for node in casts:
        wide = known.get(node.input[0])
        if wide is None:
            continue
        narrow = _to(node)
        outside = int((np.asarray(wide) != wrap(wide, narrow)).sum())
        if outside:
            out.append(_patch(case, node, pairs[node.name], np.asarray(wide).dtype, narrow, outside, wide.size))
    return out


def _patch(case: Case, node: Any, first: Any, wide: Any, narrow: Any, outside: int, size: int) -> Patch:
    w, n = np.dtype(wide).name, np.dtype(narrow).name
    why = (f"ONNX Runtime merges the Cast pair {first.name} -> {node.name} (to {w}, then to {n}; its "
           f"RemoveDuplicateCastTransformer, at every optimisation level, unless the {w} value is a graph output) "
           f"into one conversion to {n}: {outside} of the {size} {w} values lie outside {n}'s range, where torch "
           f"keeps their low bits (a wrap modulo 2**{8 * np.dtype(narrow).itemsize}) and the merged conversion "
           f"does not; with the wrap computed in {w} before the narrowing Cast the file computes what torch computes")
    fix = (f"deploy the file with the wrap written out (`drifttui repair` applies it), or wrap explicitly in the "
           f"model (`((v + 2**{8 * np.dtype(narrow).itemsize - 1}) % 2**{8 * np.dtype(narrow).itemsize} - "
           f"2**{8 * np.dtype(narrow).itemsize - 1}).to(...)`); report the merged Cast pair to onnxruntime with "
           f"`drifttui repro` (its family: {UPSTREAM})")
    spec = {"op": "rewrite", "rewrite": "int_wrap", "node": node.name, "wide": w}
    return Patch(spec, "dtype", why, fix, "runtime", module=case.module, nodes=[first.name, node.name])
