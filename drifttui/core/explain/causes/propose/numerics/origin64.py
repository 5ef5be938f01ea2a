"""The amplification counterfactual: the origin computed in float64 in the file (issue 30 point 2; a generic patch
from the graph, no catalogue entry).

Where the origin's function is ill-conditioned on its inputs (a cancellation ``x - tanh(x)`` of small values, a
large gain after it), the last-bit differences between ONNX Runtime's float32 kernels and torch's (a Tanh or Exp
approximated otherwise, a sum in another order) are amplified past the tolerance, while torch's own float32 result
is within it of the exact value.  No lowering is wrong and no single node is: the float64 trial
(``conditioning.py``) does not apply either, since torch's float32 holds the tolerance.  Computed in float64
(``onnx/edit/numerics/origin64.py``: the region's float32 inputs cast to double, its float32 values cast back), the file
lands on the exact value, within torch's own rounding of it: the patch verifies exactly when the file's float32
rounding, amplified, is the drift.  Tried last, after every patch and re-export that could name a mechanism.
Class ``stability``, kind ``runtime``; ``repair`` applies it (the module then runs in double).
"""
from __future__ import annotations


import numpy as np
from onnx import TensorProto

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.explain.causes.propose.numerics.double_kernels import expanding
from drifttui.core.onnx.edit.patches import Patch

MAX_NODES = 400          # a region this size runs in double at a cost a deployment would not take


def origin64_patches(case: Case) -> list[Patch]:
    """One patch: every node of the origin computed in float64; none when a node is unnamed, the region is
    larger than ``MAX_NODES``, or it computes no float32 value."""
    nodes = list(case.model.graph.node)
    if not nodes or len(nodes) > MAX_NODES or not all(n.name for n in nodes):
        return []
    _, known = picked_values(case, lambda n: True)
    if not known:
        return []
    stored = {t.name for t in case.model.graph.initializer if t.data_type == TensorProto.FLOAT}

    def single(v: str) -> bool:
        return v in stored or (v in known and np.asarray(known[v]).dtype == np.float32)

    produced = {o for n in nodes for o in n.output if o}
    inputs = sorted({v for n in nodes for v in n.input if v and v not in produced and single(v)})
    outputs = sorted(v for v in produced if single(v))
    if not outputs:
        return []
    why = (f"{case.module or 'the model'} is ill-conditioned on these inputs: ONNX Runtime's float32 kernels round "
           f"its intermediate values otherwise than torch's, and the computation amplifies that last-bit difference "
           f"past the tolerance, where torch's own float32 result stays within it of the exact value (no node and "
           f"no lowering is wrong on its own); computed in float64, the file lands within torch's rounding")
    fix = (f"deploy the file with {case.module or 'the model'} computed in float64 (`drifttui repair` applies it: its "
           f"inputs cast to double, its values cast back to float32), or condition the computation (a cancellation "
           f"of nearly equal values, a large gain after it: rewrite it so that it does not lose the digits)")
    head = next((n for n in nodes if n.op_type != "Constant"), nodes[0])
    spec = {"op": "rewrite", "rewrite": "origin_float64", "node": head.name, "nodes": [n.name for n in nodes],
            "inputs": inputs, "outputs": outputs, **expanding(case.model, nodes)}
    return [Patch(spec, "stability", why, fix, "runtime", module=case.module,
                  nodes=[n.name for n in nodes if n.op_type != "Constant"])]
