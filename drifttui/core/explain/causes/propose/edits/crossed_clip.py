"""A Clip whose constant bounds cross: two successive clamps an optimizer fused into one (issue 30 point 8,
held-out batch U).

The dynamo exporter's optimizer (onnxscript's ``_fuse_relus_clips``) rewrites ``Clip(Clip(x, a, b), c, d)`` as
``Clip(x, max(a, c), min(b, d))`` and ``Relu(Clip(x, a, b))`` as ``Clip(x, max(0, a), b)`` with no check that the
fused lower bound stays under the upper one (openvinotoolkit/openvino#21509 fixed the same fusion in OpenVINO).  When
the ranges are disjoint (a ReLU6 clamped again to a range above 6, a negative cap under a ReLU) ONNX's Clip gives the
upper bound everywhere and torch, which takes the clamps in order, the later lower bound.  No exporter writes a Clip
whose bounds cross for one clamp of torch (torch's own ``clamp(min > max)`` gives max, as ONNX's Clip does), so such a
Clip among the origin's nodes is tried split back (``Clip(Clip(x, max=hi), min=lo)``); a wrong guess does not verify.
"""
from __future__ import annotations

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.rewriting import static_value


def crossed_clip_patches(case: Case) -> list[Patch]:
    names = set(case.nodes)
    out: list[Patch] = []
    for node in case.model.graph.node:
        if node.name not in names or node.op_type != "Clip" or len(node.input) < 3 or not node.input[1] \
                or not node.input[2]:
            continue
        lo, hi = static_value(case.model, node.input[1]), static_value(case.model, node.input[2])
        if lo is None or hi is None or lo.size != 1 or hi.size != 1 or not float(lo) > float(hi):
            continue
        out.append(Patch({"op": "rewrite", "rewrite": "crossed_clip", "node": node.name}, "lowering",
                         f"Clip {node.name} has bounds that cross (min {float(lo):g} > max {float(hi):g}): the export "
                         "fused two successive clamps into one Clip (the dynamo exporter's optimizer merges "
                         "Clip(Clip) and Relu(Clip) without checking the fused bounds); ONNX's Clip then gives the "
                         f"max, {float(hi):g}, everywhere, while torch, taking the clamps in order, gives the later "
                         f"min, {float(lo):g}; with the upper bound first and the lower after it the file computes "
                         "what torch computes",
                         "keep the clamps apart through the export: export with `torch.onnx.export(..., "
                         "optimize=False)` or with the TorchScript exporter, or clamp once to the range torch's "
                         "order gives (`drifttui repair` splits the Clip in the file)",
                         "export", module=case.module, nodes=[node.name]))
    return out
