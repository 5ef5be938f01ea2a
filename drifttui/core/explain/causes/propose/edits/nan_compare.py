"""The generic patch for ``>=`` / ``<=`` lowered as a negated strict comparison (issue 30 point 2).

Below opset 12 ONNX has no ``GreaterOrEqual`` / ``LessOrEqual``, and the TorchScript exporter writes ``a >= b``
as ``Not(Less(a, b))`` and ``a <= b`` as ``Not(Greater(a, b))`` (pytorch/pytorch#38226 added the opset-12 ops).
For a NaN the negation is true where torch's comparison is false: the file keeps what a validity mask was
written to drop.  The counterfactual is the comparison torch makes, false on NaN, with the file's own opset
(``onnx/edit/lowerings/nan_compare.py``).  It is proposed only at a ``Not`` of a float ``Less`` / ``Greater`` whose
inputs hold NaN on the case and whose output the NaN turned true; it comes before the guards of a NaN's producer
(a 0 / 0 that torch computes too is no singular point the lowering left undefined), and is verified like any patch.

Its class is ``lowering``: the exporter's lowering of torch's ``ge`` / ``le`` at the file's opset.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.lowerings.nan_compare import NEGATED, negated_comparison
from drifttui.core.onnx.edit.patches import Patch

MAX_PATCHES = 4
UPSTREAM = "pytorch/pytorch#38226"


def nan_compare_patches(case: Case, loc: Any) -> list[Patch]:
    """The NaN-false rewrite of each negated comparison fed NaN, all of them at once first when there are several
    (a range mask has two); none when no such comparison is fed NaN."""
    nots, known = picked_values(case, lambda n: n.op_type == "Not" and n.input and n.output)
    pairs = []
    for node in nots:
        cmp = negated_comparison(case.model, node)
        if cmp is not None and _nan_made_true(known, cmp, node):
            pairs.append((node, cmp))
    pairs = pairs[:MAX_PATCHES]
    singles = [_patch(case, [p], _opset(case)) for p in pairs]
    return ([_patch(case, pairs, _opset(case))] if len(pairs) > 1 else []) + singles


def _nan_made_true(known: dict[str, Any], cmp: Any, node: Any) -> bool:
    """An input of the comparison holds NaN (as read on the case) where the negation's output is true."""
    got = known.get(node.output[0])
    for v in cmp.input:
        x = known.get(v)
        if x is None or np.asarray(x).dtype.kind != "f" or got is None:
            continue
        x, got_b = np.asarray(x), np.asarray(got).astype(bool)
        try:
            nan = np.broadcast_to(np.isnan(x), np.broadcast_shapes(x.shape, got_b.shape))
        except ValueError:
            continue
        if (nan & got_b).any():
            return True
    return False


def _opset(case: Case) -> Optional[int]:
    return next((i.version for i in case.model.opset_import if i.domain in ("", "ai.onnx")), None)


def _patch(case: Case, pairs: list[tuple[Any, Any]], opset: Optional[int]) -> Patch:
    kinds = sorted({c.op_type for _, c in pairs}, reverse=True)          # Less (>=) before Greater (<=)
    signs = " and ".join(f"a {'>=' if NEGATED[k][2] == 'ge' else '<='} b" for k in kinds)
    atens = ", ".join(f"aten.{NEGATED[k][2]}" for k in kinds)
    fulls = " / ".join(NEGATED[k][1] for k in kinds)
    plural = "ops" if len(kinds) > 1 else "op"
    negs = " / ".join(f"Not({k}(a, b))" for k in kinds)
    rewritten = " / ".join(f"{NEGATED[k][0]}(a, b) or Equal(a, b)" for k in kinds)
    names = [n.name for n, _ in pairs]
    which = (f"Not {names[0]} of {pairs[0][1].op_type} {pairs[0][1].name} is" if len(pairs) == 1 else
             f"{len(pairs)} comparisons ({', '.join(names)}) are")
    at = f"at opset {opset}" if opset is not None else "at the file's opset"
    spec = {"op": "rewrite", "rewrite": "nan_compare", "node": names[0], **({"nodes": names} if len(pairs) > 1 else {})}
    aten = NEGATED[kinds[0]][2]
    return Patch(spec, "lowering",
                 f"{which} the exporter's lowering of torch's {signs} ({atens}) {at}, which has no {fulls} "
                 f"(opset-12 {plural}): {negs} is true where a or b is NaN, and torch's comparison is false there, so "
                 f"a mask keeps the NaN it was written to drop; as {rewritten} ({fulls} from opset 12) the file "
                 "computes what torch computes",
                 f"export at `torch.onnx.export(..., opset_version=12)` or later ({fulls}: opset-12 {plural}; "
                 f"{UPSTREAM}), or fill the NaN before comparing in the model (`torch.nan_to_num`); `drifttui repair` "
                 "rewrites the comparison in the file at its opset",
                 "export", module=case.module, nodes=names, torch_op=(f"torch.Tensor.{aten}", f"aten.{aten}"))
