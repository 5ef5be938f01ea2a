"""The generic patch for a selection lowered as a product with a mask of 0 and 1 (issue 30 point 2).

Where the file's value is NaN or inf and torch's is finite, a ``Mul`` of the origin whose one operand holds only 0 and
1 and whose other operand holds inf or NaN where that mask is 0 multiplies away elements torch's op never reads:
``0 * inf`` is NaN.  Both exporters lower ``torch.diagonal`` so
(``ReduceSum(x * EyeLike(k=offset))``); a log-probability matrix masked with ``-inf`` (a causal attention, masked
self-pairs, forbidden transitions) is where code reads a diagonal.  The patch computes the product as a selection,
``Where(mask == 0, 0, x * mask)`` (``onnx/edit/lowerings/mask_select.py``), every such ``Mul`` of the origin at once
first (two diagonals of one matrix, two calls: each alone leaves the other NaN), then each alone; it is verified like
any patch.
A ``Mul`` by a constant exact zero (a coefficient, ``beta=0``) is ``singular``'s zero term, not a mask; a mask computed
from the case's data (a hard 0/1 target weighing ``t * log(p) + (1 - t) * log(1 - p)``, whose ``-inf`` is float32's
underflow of ``Log(Sigmoid(x))``: the stable form's story) is no selection: the mask must be structure, made from
constants and the inputs' shapes alone (an ``EyeLike``).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.propose.edits.constants import constant_arrays
from drifttui.core.explain.causes.locate.align_graph import fed_values
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.patches import Patch

MAX_PATCHES = 4


def mask_select_patches(case: Case, loc: Any) -> list[Patch]:
    """A ``mask_select`` rewrite per Mul that multiplies inf or NaN by the 0 of a 0/1 mask (none when nothing fits)."""
    if loc is not None and not getattr(getattr(loc, "ort", None), "nonfinite", 1):
        return []       # the localisation saw no element inf or NaN on one side only: no run of every node needed
    wrong = loc.fx.wrong if loc is not None and getattr(loc, "fx", None) is not None else None
    # the whole origin, not only the FX-named group: a second diagonal of the same matrix is another call's group
    nodes, known = picked_values(case, lambda n: n.op_type == "Mul" and len(n.input) == 2)
    if not nodes or not _nonfinite_where_torch_is_finite(case, known):
        return []
    known = {**constant_arrays(case.model), **known}
    data = fed_values(case)     # a selection mask is structure (an EyeLike of the shapes), not data: a 0/1 target
    found = [(node, mask) for node in nodes for mask in [_mask_of(node, known)]     # weighs a loss's terms
             if mask is not None and mask not in data][:MAX_PATCHES]
    singles = [_patch(case, [(node, mask)], wrong) for node, mask in found]
    # every such product at once first (two diagonals of one matrix: each alone leaves the other NaN)
    return ([_patch(case, found, wrong)] if len(found) > 1 else []) + singles


def _mask_of(node: Any, known: dict[str, np.ndarray]) -> Optional[str]:
    """The input of ``node`` that is a mask of 0 and 1 (a 0 among them) whose 0s meet inf or NaN in the other input."""
    a, b = (np.asarray(known[i]) if i in known else None for i in node.input)
    for mask, other, name in ((a, b, node.input[0]), (b, a, node.input[1])):
        if mask is None or other is None or mask.dtype.kind != "f" or other.dtype.kind != "f" or not mask.size:
            continue
        if not np.isin(mask, (0.0, 1.0)).all() or not (mask == 0).any() or not (mask == 1).any():
            continue
        try:
            off, bad = np.broadcast_arrays(mask == 0, ~np.isfinite(other))
        except ValueError:
            continue
        if (off & bad).any():
            return name
    return None


def _nonfinite_where_torch_is_finite(case: Case, vals: dict[str, np.ndarray]) -> bool:
    for name, want in case.expected.items():
        got = vals.get(name)
        if got is None or np.shape(got) != np.shape(want) or np.asarray(got).dtype.kind != "f":
            continue
        if (~np.isfinite(got) & np.isfinite(np.asarray(want, dtype=np.float64))).any():
            return True
    return False



def _made_by(model: Any, value: str) -> str:
    """The op that makes ``value``, through Casts (an identity mask is an ``EyeLike``)."""
    made = {o: n for n in model.graph.node for o in n.output}
    node = made.get(value)
    while node is not None and node.op_type in ("Cast", "CastLike") and node.input:
        node = made.get(node.input[0])
    return node.op_type if node is not None else "a constant"


def _patch(case: Case, found: list[tuple[Any, str]], wrong: Any) -> Patch:
    """One ``mask_select`` rewrite, or a ``sequence`` of them (every such product of the origin at once)."""
    of = f" in the lowering of torch's {wrong.target}" if wrong is not None else ""
    made = {_made_by(case.model, mask) for _, mask in found}
    kind = "an identity mask (EyeLike: the exporters' lowering of torch.diagonal, ReduceSum(x * EyeLike))" \
        if made == {"EyeLike"} else f"a mask of 0 and 1 ({', '.join(sorted(made))})"
    specs = [{"op": "rewrite", "rewrite": "mask_select", "node": node.name, "mask": mask} for node, mask in found]
    names = ", ".join(node.name for node, _ in found)
    return Patch(specs[0] if len(specs) == 1 else {"op": "sequence", "patches": specs}, "lowering",
                 f"Mul {names}{of} select{'s' if len(specs) == 1 else ''} elements by multiplying with {kind}: where "
                 "the mask is 0 the other operand holds inf or NaN, and 0 * inf is NaN; torch's op reads only the "
                 "selected elements (a diagonal is a strided view), the lowering multiplies the others by 0; with "
                 "Where(mask == 0, 0, ·) on the product the file computes what torch computes",
                 "report the lowering to torch.onnx with `drifttui repro`; until it is fixed, keep the unselected "
                 "elements finite in the model (mask with torch.finfo(dtype).min rather than -inf before the "
                 "selection), or let `drifttui repair` select with Where in the file",
                 "export", module=case.module, nodes=[node.name for node, _ in found])
