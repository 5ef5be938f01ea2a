"""Why a call inside a ``torch.autocast`` region of a dynamo file has no ONNX node of its own.

torch.export wraps an autocast region into one higher-order op (``wrap_with_autocast``), and the dynamo exporter
lowers it with the scope of the module that opened the region: the Linears called inside it leave no node under
their own names, and their float32 weights are cast to float16 at export time (constants of another type, not the
parameters).  Mapping then says "not exported: the exporter removed it (its output does not reach the model
outputs, or it was constant-folded)", which is not what happened: the call is computed, as part of the module that
opened the region, and compared there.  The TorchScript exporter keeps the calls' scopes inside a region.
"""
from __future__ import annotations

from drifttui.core.onnx.graph import DYNAMO, GraphIndex
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import FUSED, NOT_EXPORTED
from drifttui.core.runtime.torch_hooks import Call


def note_autocast(index: GraphIndex, calls: list[Call], plan: Plan) -> None:
    """Each node-less call of a dynamo file that ran inside an autocast region said so (its note)."""
    if index.flavour != DYNAMO:
        return
    for cm in plan.calls:
        call = calls[cm.call]
        if not call.autocast or cm.nodes or cm.status not in (NOT_EXPORTED, FUSED) or call.parent is None:
            continue
        parent = calls[call.parent].module or "(root)"
        cm.note = (f"no ONNX node of its own: called inside a torch.autocast region ({call.autocast}), which the "
                   f"dynamo exporter lowers under the scope of the module around it, its weights cast at export "
                   f"time: computed and compared as part of {parent}")
