"""A float16 recurrent node ONNX Runtime computes in float32 (issue 30 point 8, held-out batch 41D).

ONNX Runtime has no float16 ``LSTM`` / ``GRU`` / ``RNN`` kernel: it runs the node through float32 Casts, and the
state stays in float32 over every step.  torch's float16 CPU layer rounds each op of each step to float16, so where
the recurrence has a long memory (a forget or update gate held near 1) the small increments of the state round away
in torch and add up in the file.  For each such node of the origin, the node computed as torch's cell computes it,
each op's float32 result rounded to float16 (``onnx/edit/numerics/half_recurrence.py``), is proposed; it verifies
when that rounding is the drift (microsoft/onnxruntime#8787's family of dropped float16 roundings, inside one fused
node).  Class ``dtype``, kind ``runtime``: the file's node is right, the kernel that runs it drops torch's rounding.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.onnx.edit.numerics.half_recurrence import GATES, elem_dtype
from drifttui.core.onnx.edit.patches import Patch

LOW = ("float16",)


def half_recurrence_patches(case: Case) -> list[Patch]:
    nodes = [n for n in case.model.graph.node if n.op_type in GATES]
    return [_patch(case, n) for n in nodes if str(elem_dtype(case.model, n.input[0])) in LOW]


def _patch(case: Case, node: Any) -> Patch:
    return Patch({"op": "rewrite", "rewrite": "half_recurrence", "node": node.name}, "dtype",
                 f"ONNX Runtime has no float16 {node.op_type} kernel: it runs {node.name} through float32 Casts and "
                 "keeps the state in float32 over every step, where torch's float16 CPU cell rounds each gate and the "
                 "state to float16 at each step (a long memory's small increments round away in torch and add up "
                 f"in the file); with the {node.op_type} computed as torch's cell computes it, each op rounded to "
                 "float16, the file computes what torch computes",
                 "keep the recurrent layer in float32 in the model (`rnn.float()`, the input cast to float32 and the "
                 "output back) if the float32 state is the one you want, else let `drifttui repair` write torch's "
                 "per-step float16 rounding in the file",
                 "runtime", module=case.module, nodes=[node.name])
