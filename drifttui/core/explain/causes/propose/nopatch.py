"""Drifts that no graph edit can remove, said exactly: the finding names why there is no patch.

* TopK on tied values: ONNX TopK returns the lower index first among equal values (the spec's
  rule, and ONNX Runtime's); ``torch.topk`` orders ties in an implementation-defined way.  No edit
  of the ONNX graph reproduces torch's order, so no patch exists; the fix is in the model.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.evaluate import run_ort


def _topk_ties(case: Any, node: Any) -> Optional[int]:
    """How many rows of the TopK input hold a tie inside (or at the edge of) the k selected values."""
    x_name = node.input[0]
    try:
        vals = run_ort(case.model, case.feeds, [x_name] + ([node.input[1]] if len(node.input) > 1 else []))
    except Exception:  # noqa: BLE001 - no values, no claim
        return None
    x = np.asarray(vals.get(x_name, case.feeds.get(x_name)))
    k_arr = vals.get(node.input[1]) if len(node.input) > 1 else None
    k = int(np.asarray(k_arr).ravel()[0]) if k_arr is not None else next(
        (a.i for a in node.attribute if a.name == "k"), 1)
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    rows = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
    ties = 0
    for r in rows:
        top = np.sort(r)[::-1][: min(k + 1, r.size)]
        ties += int(len(np.unique(top)) < len(top))
    return ties


def explain_no_patch(case: Any) -> Optional[tuple[str, str, str, list[str]]]:
    """(class, message, fix, nodes) when the origin's drift has a known reason no patch can remove."""
    for node in case.model.graph.node:
        if node.op_type != "TopK":
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
    return None
