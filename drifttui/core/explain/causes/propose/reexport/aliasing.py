"""The story of a verified dynamo re-export of a TorchScript origin that updates a tensor in place
through a view (locate/aliased_updates.py): the TorchScript exporter's handling of aliasing, named by
the torch op (``aten.mul_`` through ``aten.view``), never by the ONNX node that was left."""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.explain.causes.locate.aliased_updates import aliased_update
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.reexport.definitions import Told
from drifttui.core.prepare.reference import run_exporter
from drifttui.core.result import display_name

FIX = ("write the update out of place (`torch.cat`, `Tensor.slice_scatter` / `select_scatter`, `index_copy`) "
       "instead of through a view, or export with `torch.onnx.export(..., dynamo=True)`")


def aliased_told(ctx: Any, case: Case, variant: Any) -> Optional[Told]:
    """A TorchScript file, a dynamo re-export, and an in-place update through a view in the origin."""
    made_by = run_exporter(ctx.index, ctx.cfg)
    if not str(made_by).startswith("torchscript") or variant.exporter != "dynamo":
        return None
    found = aliased_update(ctx, case)
    if found is None:
        return None
    return Told("lowering", (f"the TorchScript exporter loses {display_name(case.module)}'s in-place update "
                             f"{found.words} (aliasing + mutation: the trace does not carry the update back to the "
                             "tensor it aliases, or reads the view before it); the dynamo exporter "
                             "functionalizes it (slice_scatter / select_scatter); "), FIX,
                (found.call, found.aten) if found.call else None)
