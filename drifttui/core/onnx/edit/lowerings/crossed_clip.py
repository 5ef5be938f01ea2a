"""Graph edit: split a Clip whose bounds cross back into the two clamps torch applies (``causes/propose/edits/
crossed_clip.py``).

An optimizer fused two successive clamps (``Clip(Clip(x, a, b), c, d)`` -> ``Clip(x, max(a, c), min(b, d))``,
``Relu(Clip(x, a, b))`` -> ``Clip(x, max(0, a), b)``) without checking that the new lower bound stays under the new
upper one.  Where it does not, ONNX's Clip gives the upper bound everywhere, while torch, taking the clamps in their
order, ends on the later one's lower bound.  ``crossed_clip`` writes ``Clip(Clip(x, max=hi), min=lo)``: the upper
bound first, then the lower, as torch's graph does (the other order is what the fused Clip already computes).
"""
from __future__ import annotations

from typing import Any

from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted, static_value


def apply_crossed_clip(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    node = find_node(model, spec["node"], "Clip")
    if len(node.input) < 3 or not node.input[1] or not node.input[2]:
        raise ValueError(f"Clip {spec['node']!r} has no two bounds")
    lo, hi = static_value(model, node.input[1]), static_value(model, node.input[2])
    if lo is None or hi is None or not float(lo) > float(hi):
        raise ValueError(f"Clip {spec['node']!r} has no constant bounds that cross")
    p = f"{node.name}/drifttui_upper_first"
    upper = helper.make_node("Clip", [node.input[0], "", node.input[2]], [f"{p}/y"], name=p)
    del node.input[2]
    node.input[0] = f"{p}/y"
    splice_sorted(model, [upper], anchor=node)


APPLY = {"crossed_clip": apply_crossed_clip}
