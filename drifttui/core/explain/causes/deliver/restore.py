"""``drifttui repair`` of a drift whose evidence is by content: a reduced-precision weight that is not a
rounding of the model's tensor (prepare/qweight_check.py), a node attribute that is not what its module
declares (prepare/attr_check.py), or an activation's constant input that is not its module's (prepare/attr_consts.py:
put back when its node alone reads it).

No test case of the origin is needed (in an int8 file whose CPU kernel saturates there is none): the
evidence names the initializer or attribute and the model gives its value.  The model's tensor goes back
on the file's own grid (requantized with the reader's own scale, zero point and axis, or rounded to
float16), the attribute goes back to the module's value, and the copy is checked end to end: the patch
is verified when no restored layer is a genuine drift any more.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.deliver.repair import Repair
from drifttui.core.onnx.edit.restore import RestoreError, restore
from drifttui.core.onnx.graph import full_model, tensor_array
from drifttui.core.prepare.plan.plan import AttrCheck
from drifttui.core.prepare.qweight_check import model_weights
from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS, WEIGHT_NOT_THE_MODELS


def _failing(pr: Any, atol: float, rtol: float) -> dict[int, list[Any]]:
    """Call -> its strict checks (weights against the model's, attributes) that fail."""
    return {cm.call: bad for cm in pr.plan.calls
            if (bad := [w for w in cm.weights if getattr(w, "strict", False) and w.fails(atol, rtol)])}


def restoration(pr: Any, result: Any) -> Optional[Repair]:
    """The copy with every failing weight and attribute of the origin's call put back, or None when the
    origin's evidence is not by content."""
    o = result.drift_origin
    bad = _failing(pr, result.config.atol, result.config.rtol)
    if o is None or o.layer not in bad:
        return None
    wanted = {w.init: c for c, checks in bad.items() for w in checks if getattr(w, "init", "")}
    tensors, applied = {}, []
    for c, w, label, t in model_weights(pr.index, pr.calls, pr.model, (pr.budgets or ({}, 0.0))[0]):
        if w.name in wanted:
            dtype = tensor_array(pr.index, w.name).dtype       # read where it lies (external data too)
            tensors[w.name] = w.requantized(t, dtype)
            how = "requantized with the file's own scale and zero point" if w.zero is not None else f"rounded to {dtype}"
            applied.append({"op": "restore_weight", "name": w.name, "module": pr.calls[c].module, "from": label,
                            "how": how})
    attrs = []
    for c, checks in bad.items():
        for a in (a for a in checks if isinstance(a, AttrCheck) and a.restore is not None):
            attrs.append((pr.index.nodes[a.node].outputs[0], a.attr, a.restore))
            applied.append({"op": "restore_attribute", "node": pr.index.nodes[a.node].name, "name": a.attr,
                            "value": a.restore, "module": pr.calls[c].module})
        for a in (a for a in checks if isinstance(a, AttrCheck) and a.tensor is not None):
            name, dtype, shape, values = a.tensor     # an activation's constant input (prepare/attr_consts.py)
            tensors[name] = np.array(values, dtype=dtype).reshape(shape)
            applied.append({"op": "restore_constant", "node": pr.index.nodes[a.node].name, "name": name,
                            "value": list(values), "module": pr.calls[c].module})
    if not applied:
        return None
    try:
        model = restore(full_model(pr.index), tensors, attrs)
    except RestoreError:
        return None
    return Repair(model, applied=applied)


def verified(after: Any, applied: list[dict[str, Any]]) -> bool:
    """The restored copy's check: no restored module's weight or attribute is still not the model's, and
    none of them is a genuine drift any more."""
    modules = {p["module"] for p in applied}
    for L in after.layers:
        if L.module in modules and (WEIGHT_NOT_THE_MODELS in L.note or ATTRIBUTE_NOT_THE_MODELS in L.note):
            return False
    o = after.drift_origin
    genuine = o is not None and (after.precision is None or after.precision.cause == "genuine drift")
    return not (genuine and o.module in modules)
