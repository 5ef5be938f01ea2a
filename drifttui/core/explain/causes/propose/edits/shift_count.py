"""A left shift by a count at or past its type's width (issue 30 point 8, fuzzJ 34101: ``a << b`` of int64).

torch's ``a << b`` (``__lshift__``, ``bitwise_left_shift``) is 0 where the count ``b`` reaches the type's width.
The TorchScript exporter writes it ``a * Cast(2.0 ** b, int)``: there ``2 ** b`` is past the integer type's range,
its Cast gives INT64_MIN, and the product ``a * INT64_MIN`` (0 or INT64_MIN) where torch's is 0.  Proposed for
each integer ``Cast`` of the origin that reads ``Pow(2, b)`` and feeds only products, where the count on the case
reaches the width (none otherwise: then the edit changes nothing); the factor made 0 there
(``onnx/edit/lowerings/shift_count.py``), verified like any patch.  Its class is ``lowering``: the exporter writes
a shift as an arithmetic that does not hold at the type's width.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from drifttui.core.base.dtypes import INT_ELEMS
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.lowerings.shift_count import power_of_two
from drifttui.core.onnx.edit.patches import Patch


def _factor_casts(case: Case) -> dict[str, Any]:
    """Cast name -> the Pow(2, b) it reads, for the origin's integer Casts of a power of two read by Mul alone."""
    names, out = set(case.nodes), {}
    for n in case.model.graph.node:
        if n.op_type != "Cast" or n.name not in names or next(a.i for a in n.attribute if a.name == "to") \
                not in INT_ELEMS:
            continue
        readers = [m for m in case.model.graph.node if n.output[0] in m.input]
        pow_ = power_of_two(case.model, n)
        if pow_ is not None and readers and all(m.op_type == "Mul" for m in readers):
            out[n.name] = pow_
    return out


def shift_count_patches(case: Case) -> list[Patch]:
    pows = _factor_casts(case)
    casts, known = picked_values(case, lambda n: n.name in pows)
    out = []
    for node in casts:
        count = known.get(pows[node.name].input[1])
        to = helper.tensor_dtype_to_np_dtype(next(a.i for a in node.attribute if a.name == "to"))
        bits = 8 * np.dtype(to).itemsize
        if count is None or not (np.asarray(count, np.float64) >= bits).any():
            continue
        past = int((np.asarray(count, np.float64) >= bits).sum())
        out.append(Patch(
            {"op": "rewrite", "rewrite": "shift_count", "node": node.name, "bits": bits}, "lowering",
            f"the shift a << b (torch's __lshift__ / bitwise_left_shift) is written as a * {node.name}, the "
            f"power 2 ** b cast to {np.dtype(to).name}: {past} count(s) reach the type's {bits} bits, where torch's "
            f"shift gives 0 and 2 ** b is past {np.dtype(to).name}'s range (its Cast gives the integer "
            "indefinite, INT_MIN); with the factor 0 there the file computes what torch computes",
            f"keep shift counts below {bits} in the model (clamp them, or mask the result where b >= {bits}), or "
            "deploy the repaired file (`drifttui repair` makes the factor 0 past the width)",
            "export", module=case.module, nodes=[pows[node.name].name, node.name]))
    return out
