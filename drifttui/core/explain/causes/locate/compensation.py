"""Does a verified patch change what the file computes right (``conclude._contradicted``'s second half)?

A patch whose nodes all compute values torch computes too (aligned by value) may still be the fix: a float64
accumulation moves a ``CumSum`` that holds torch's value within the tolerance by its rounding, and a later
subtraction amplifies exactly that rounding (a prefix variance).  Such a patch keeps its story.  A patch that moves
one of those values past the tolerance (a guard turning torch's own NaN of ``0 / 0`` into 0) makes the file compute
otherwise than torch there, to make up for a call after it: its story does not hold.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import node_values, run_ort
from drifttui.core.explain.causes.locate.fx_localise import floored_rel
from drifttui.core.onnx.edit.patches import apply


def moves_right_values(case: Case, patch: Any) -> bool:
    """Whether ``patch`` moves the value of one of its nodes past the case's relative tolerance (floored, a NaN or inf
    that changes is inf), on the case's inputs.  False when that cannot be told (a value the patched file no longer
    holds, a file that does not run)."""
    names = set(patch.nodes)
    own = [v for n in case.model.graph.node if n.name in names for v in n.output[:1] if v]
    before = node_values(case) or {}
    own = [v for v in own if v in before and np.asarray(before[v]).dtype.kind == "f"]
    if not own:
        return False
    try:
        model = apply(case.model, patch)
        held = {v for n in model.graph.node for v in n.output}
        after = run_ort(model, case.feeds, [v for v in own if v in held], case.elem_types)
    except Exception:  # noqa: BLE001 - untold: the story stands
        return False
    return any(np.shape(after[v]) == np.shape(before[v]) and floored_rel(before[v], after[v]) > case.rtol
               for v in after)
