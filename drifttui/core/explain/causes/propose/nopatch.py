"""Drifts that no graph edit can remove, said exactly: the finding names why there is no patch.

* TopK on tied values: ONNX TopK returns the lower index first among equal values (the spec's
  rule, and ONNX Runtime's); ``torch.topk`` orders ties in an implementation-defined way.  No edit
  of the ONNX graph reproduces torch's order, so no patch exists; the fix is in the model.
* An unsorted TopK (``topk(sorted=False)``, written ``TopK(sorted=0)``) whose k indices torch's CPU kernel returns
  in its own selection order, neither sorted nor by index (a quickselect's), where the file's TopK returns the same
  indices in another: ``sorted=1`` (propose/edits/topk_order.py) reproduces torch only where torch's kernel sorted
  them, and no ONNX op computes a kernel's selection order, so no patch exists (a router that reads its first slot
  as the primary expert, session 46).

Neither story holds for a TopK whose indices nothing reads (no node, no graph output): a ``torch.sort`` whose
values alone are used (a sort-based sparsemax or entmax) returns the same values whatever order its ties take, so
ties there remove no patch and tell nothing (session 48: a float16 sparsemax ties in every row of its sort).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.onnx.graph import attribute_values


def _topk_values(case: Any, node: Any, outputs: tuple = ()) -> Optional[tuple[np.ndarray, int, int, list]]:
    """(the TopK's input, k, axis, the file's values of ``outputs``), or None when they cannot be computed."""
    x_name = node.input[0]
    try:
        vals = run_ort(case.model, case.feeds,
                       [x_name] + ([node.input[1]] if len(node.input) > 1 else []) + list(outputs))
    except Exception:  # noqa: BLE001 - no values, no claim
        return None
    x = np.asarray(vals.get(x_name, case.feeds.get(x_name)))
    k_arr = vals.get(node.input[1]) if len(node.input) > 1 else None
    k = int(np.asarray(k_arr).ravel()[0]) if k_arr is not None else next(
        (a.i for a in node.attribute if a.name == "k"), 1)
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    return x, k, axis, [np.asarray(vals[o]) for o in outputs]


def _topk_ties(case: Any, node: Any) -> Optional[int]:
    """How many rows of the TopK input hold a tie inside (or at the edge of) the k selected values."""
    got = _topk_values(case, node)
    if got is None:
        return None
    x, k, axis, _ = got
    rows = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
    ties = 0
    for r in rows:
        top = np.sort(r)[::-1][: min(k + 1, r.size)]
        ties += int(len(np.unique(top)) < len(top))
    return ties


def _unsorted_rows(case: Any, node: Any) -> Optional[int]:
    """How many rows an unsorted TopK's file indices hold torch's ``topk(sorted=False)`` indices of the same input
    in another order, torch's not sorted (so ``sorted=1`` cannot reproduce it); None for a sorted TopK."""
    import torch

    attrs = attribute_values(node)
    if int(attrs.get("sorted", 1)) or len(node.output) < 2 or not node.output[1]:
        return None
    got = _topk_values(case, node, (node.output[1],))
    if got is None or got[0].dtype.kind != "f":
        return None
    x, k, axis, (idx,) = got
    largest = bool(int(attrs.get("largest", 1)))
    t = torch.from_numpy(np.ascontiguousarray(x))
    mine = torch.topk(t, k, axis, largest, False).indices.numpy()
    ordered = torch.topk(t, k, axis, largest, True).indices.numpy()
    mine, ordered, idx = (np.moveaxis(a, axis, -1).reshape(-1, k) for a in (mine, ordered, idx))
    same_set = (np.sort(mine, -1) == np.sort(idx, -1)).all(-1)
    return int((same_set & (mine != idx).any(-1) & (mine != ordered).any(-1)).sum())


def _indices_read(graph: Any, node: Any) -> bool:
    """Whether anything reads the TopK's indices: a node's input or a graph output."""
    idx = node.output[1] if len(node.output) > 1 else ""
    return bool(idx) and (any(idx in n.input for n in graph.node) or any(o.name == idx for o in graph.output))


def explain_no_patch(case: Any) -> Optional[tuple[str, str, str, list[str]]]:
    """(class, message, fix, nodes) when the origin's drift has a known reason no patch can remove."""
    for node in case.model.graph.node:
        if node.op_type != "TopK" or not _indices_read(case.model.graph, node):
            continue
        ties = _topk_ties(case, node)
        if ties:
            return ("op-compat",
                    f"TopK {node.name} selects among tied values in {ties} row(s): ONNX TopK returns the lower "
                    "index first among equal values, torch.topk orders ties in an implementation-defined way, "
                    "so the indices differ where the values agree; no edit of the ONNX graph reproduces "
                    "torch's order (no patch exists)",
                    "make the ranking tie-free in the model (e.g. add a tiny index-dependent offset before "
                    "topk), or compare the values rather than the indices", [node.name])
        rows = _unsorted_rows(case, node)
        if rows:
            return ("op-compat",
                    f"TopK {node.name} returns its k values unsorted (sorted=0, torch's topk(sorted=False)): "
                    f"torch's CPU kernel returns the same k indices in another order in {rows} row(s), its own "
                    "selection order (neither sorted nor by index), so what reads them by position (a first slot "
                    "taken as the primary choice) differs; no edit of the ONNX graph reproduces the kernel's "
                    "order, and sorted=1 does not either (no patch exists)",
                    "call topk with sorted=True (the order is then defined on both sides), or make what follows "
                    "independent of the order (weigh every slot alike, or sort the indices)", [node.name])
    return None
