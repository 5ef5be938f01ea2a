"""An unsorted TopK whose order the runtime chooses (issue 30 point 8, fuzzJ: ``topk(..., sorted=False)``).

``torch.topk(x, k, sorted=False)`` leaves the order of the k values to the kernel, and both exporters write it as
``TopK(sorted=0)``, whose order ONNX leaves unspecified too.  torch's CPU kernel returns them in sorted order on
such inputs (a partial sort, or a selection it does not shuffle), the ONNX reference implementation sorts them, and
ONNX Runtime's selection returns them in another order (a heap's): the same k values, each row permuted, so a
later op that reads them by position (a view, a slice, a sum in order) moves by their differences.  No export
option changes the kernel; a graph counterfactual can: ``sorted=1``, the order torch's kernel gave.  Proposed for
each ``TopK(sorted=0)`` among the origin's nodes; verified like any patch (a different order in torch does not
verify).  Its class is ``op-compat``/``runtime``: the op's order is the runtime's own.
"""
from __future__ import annotations

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.graph import attribute_values


def unsorted_topk_patches(case: Case) -> list[Patch]:
    names = set(case.nodes)
    out: list[Patch] = []
    for node in case.model.graph.node:
        if node.name not in names or node.op_type != "TopK" or int(attribute_values(node).get("sorted", 1)):
            continue
        out.append(Patch({"op": "set_attribute", "node": node.name, "name": "sorted", "value": 1}, "op-compat",
                         f"TopK {node.name} returns its k values unsorted (sorted=0, torch's topk(sorted=False)): "
                         "their order is the runtime's own, and ONNX Runtime's selection orders them otherwise than "
                         "torch's kernel, which returned them sorted; the same values land at other positions, "
                         "and as sorted=1 the file computes what torch computes",
                         "call topk with sorted=True (the order is then defined on both sides), or make what "
                         "follows independent of the order (sort the values, or compare them as a set)",
                         "runtime", module=case.module, nodes=[node.name]))
    return out
