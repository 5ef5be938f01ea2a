"""The padding value a packed-sequence lowering drops (issue 30 point 8, held-out batch 41D).

torch's ``pad_packed_sequence(packed, padding_value=v)`` writes ``v`` at the steps past each sequence's length
(``-inf`` before a max over time, ``-1`` for "no tag"); the TorchScript exporter lowers the pack / recurrent op /
pad triple into one ONNX ``LSTM`` / ``GRU`` / ``RNN`` with a ``sequence_lens`` input and drops the argument (its
symbolic for ``aten::_pad_packed_sequence`` ignores it, pytorch/pytorch#28423), and the ONNX op writes 0 there.
The value is read from torch itself: the origin module's forward run again on its captured inputs, each
``torch._VF._pad_packed_sequence`` it calls recorded with its ``padding_value``.  For each value other than 0 and
each recurrent node of the origin that reads a ``sequence_lens``, the padded steps written as that value
(``onnx/edit/lowerings/packed_padding.py``) is proposed; a wrong guess does not verify.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.onnx.edit.patches import Patch

UPSTREAM = "pytorch/pytorch#28423"
RECURRENT = ("LSTM", "GRU", "RNN")
TORCH_OP = ("torch.nn.utils.rnn.pad_packed_sequence", "aten._pad_packed_sequence.default")   # the call the story names


def packed_padding_patches(ctx: Any, case: Case) -> list[Patch]:
    nodes = [n for n in case.model.graph.node if n.op_type in RECURRENT and len(n.input) > 4 and n.input[4]]
    if not nodes:
        return []
    values = [v for v in dict.fromkeys(_padding_values(ctx, case)) if v != 0.0]
    return [_patch(case, n, v) for n in nodes for v in values]


def _padding_values(ctx: Any, case: Case) -> list[float]:
    """The ``padding_value`` of each ``_pad_packed_sequence`` the origin's forward calls (one run per
    origin, ``ctx.cache``); [] when the forward cannot be run again."""
    key = f"causes:packed_padding:{case.call}"
    if key not in ctx.cache:
        ctx.cache[key] = _record(ctx, case) or []
    return ctx.cache[key]


def _record(ctx: Any, case: Case) -> Optional[list[float]]:
    import torch
    from torch.overrides import TorchFunctionMode

    module = ctx.modules().get(case.module) if case.module else ctx.model
    io = call_io(ctx, case)
    if module is None or io is None:
        return None
    seen: list[float] = []

    class Padding(TorchFunctionMode):      # a composite op: a dispatch mode sees only what it is made of
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if getattr(func, "__name__", "") == "_pad_packed_sequence" and len(args) > 3:
                seen.append(float(args[3]))
            return func(*args, **(kwargs or {}))

    try:
        with torch.no_grad(), Padding():
            as_called(ctx, case.call, module, ctx.sample(case.sample))(*io[0])
    except Exception:  # noqa: BLE001 - no torch witness: nothing proposed
        return None
    return seen


def _spec_value(v: float) -> Any:
    """The value as the spec holds it: a number, or its text where JSON holds no number (``-inf``)."""
    return v if math.isfinite(v) else str(v)


def _patch(case: Case, node: Any, v: float) -> Patch:
    return Patch({"op": "rewrite", "rewrite": "packed_padding", "node": node.name, "value": _spec_value(v)},
                 "lowering",
                 f"{node.op_type} {node.name} writes 0 at the steps past each sequence's length (ONNX's padding of "
                 f"a {node.op_type} with sequence_lens) where torch's pad_packed_sequence writes its padding_value "
                 f"{v:g}: the TorchScript exporter's lowering of the packed sequence drops padding_value "
                 f"({UPSTREAM}); with Where(step < sequence_lens, Y, {v:g}) the file computes what torch computes",
                 "pad with the default 0 and write the padding after the call (`y.masked_fill(step >= lengths, "
                 f"{v:g})`), or let `drifttui repair` write it in the file",
                 "export", module=case.module, nodes=[node.name], torch_op=TORCH_OP)
