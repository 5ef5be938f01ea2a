"""The class of a verified re-export by the file's own exporter when the file declares a dim of the origin's
inputs dynamic: a lowering that depends on a size the exporter could not read.

A re-export of the origin on the runtime input shapes is static.  When today's same exporter makes it and it computes
torch's values, the story so far was ``versions`` (the file was made by another torch, or edited).  But the file's
export saw those sizes as dynamic, and an exporter may lower a call otherwise when it cannot read a size: the
TorchScript exporter's ``cdist`` takes the matrix-product route ``|a|^2 + |b|^2 - 2ab`` whenever a row count is
unknown, where torch, which knows it, computes the direct difference for 25 rows or fewer.  So the origin is exported
once more by the same exporter, with the file's dynamic dims: when that export differs from torch on this sample and
the static one does not, the dims are what changed the numbers, and the cause is the lowering of the call on a
dynamic size (``lowering``); the fix is the size made static, or the call written so its route does not depend on
it.  When the dynamic export computes torch's values too, ``versions`` stands.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.torch_program import program_targets
from drifttui.core.explain.causes.propose.reexport.definitions import Told
from drifttui.core.explain.causes.propose.reexport.frozen_trace import dynamic_dims
from drifttui.core.prepare.reference import run_exporter
from drifttui.core.result import display_name

Export = Callable[[Any, list[Any]], Any]                  # (module, inputs) -> the file's exporter, its dynamic dims
Run = Callable[[Any, list[Any], list[np.ndarray]], Any]   # (model, inputs, expected outputs) -> Eval


def same_export(ctx: Any, variant: Any) -> bool:
    """``variant`` is the file's own exporter with nothing changed but the sizes (a user's file re-exported on the
    runtime input shapes): the re-export whose story was ``versions``."""
    return bool(ctx.cfg.onnx) and bool(getattr(variant, "same", False))


def dynamic_lowering(ctx: Any, case: Case, module: Any, ins: list[Any], outs: list[np.ndarray], variant: Any,
                     export: Export, run: Run, op: Any = None) -> Optional[Told]:
    """The dynamic-size lowering story of a verified static re-export, or None (see the module docstring); ``op``:
    the torch op the origin's values name (locate's TorchOp), the call the story is about."""
    if not same_export(ctx, variant) or not any(dynamic_dims(ctx, case, ins)):
        return None
    try:
        ev = run(export(module, ins), ins, outs)
    except Exception:  # noqa: BLE001 - a module that does not export with those dims: no evidence
        return None
    if ev is None or not ev.ok or not ev.fails:
        return None            # with the file's dims it computes torch's values too: the sizes are not the cause
    made_by, name = run_exporter(ctx.index, ctx.cfg), display_name(case.module)
    aten = getattr(op, "aten", None) or getattr(op, "target", None)
    ops = [aten] if aten else [t for t in program_targets(ctx, case) if t.startswith("aten.")][:3]
    calls = f"{', '.join(ops)} (called by {name})" if ops else f"{name}'s torch calls"
    return Told("lowering",
                f"the {made_by} exporter's lowering of {calls} on a size the file declares dynamic computes otherwise "
                f"than torch: exported again with the file's dynamic dims it differs from torch on this sample, with "
                "this sample's sizes static it does not (the lowering picks its route by a size it cannot read at "
                "export time); ",
                "export with those sizes static (no dynamic_axes / dynamic_shapes entry for them), or write the call "
                "so its route does not depend on the size; report the lowering to torch.onnx with `drifttui repro`",
                (op.target, aten) if aten else None)


__all__ = ["dynamic_lowering", "same_export"]
