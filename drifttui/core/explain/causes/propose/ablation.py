"""What a verified catalogue patch really changed (issue 30 point 4): a patch that moves the file to a
newer opset *and* edits an attribute (antialias=1 at opset 18, reduction="add" at 16) tells its
story by the attribute.  When the version conversion alone also removes the drift, the attribute
is not why: the finding is re-labelled by the conversion (the file's lowering at its old opset
computes otherwise), and ``repair`` applies the conversion alone.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.reexport.story import lowering_class
from drifttui.core.onnx.edit.patches import Patch

# the catalogue rewrites that convert the whole file first, and the opset they convert to (not
# resize_opset11: its story is the conversion itself, opset 11's coordinate modes)
CONVERTING = {"resize_antialias": 18, "scatter_reduction": 16}


def conversion_alone(case: Case, patch: Patch) -> Optional[Patch]:
    """The version conversion ``patch`` makes, without its attribute edit; None for a patch that
    converts nothing (another op, or a file already at that opset)."""
    if patch.spec.get("op") != "rewrite":
        return None
    target = CONVERTING.get(patch.spec.get("rewrite", ""))
    if target is None or (case.opset or target) >= target:
        return None
    node = next((n for n in case.model.graph.node if n.name == patch.spec.get("node")), None)
    what = f"{node.op_type} {node.name}" if node is not None else "the origin's nodes"
    spec = {"op": "rewrite", "node": patch.spec.get("node", ""), "rewrite": "convert_opset", "opset": target}
    why = (f"converting the file from opset {case.opset} to {target} alone removes the drift ({what} as the "
           f"converter writes it at opset {target} computes what torch computes): not the "
           f"{patch.spec['rewrite']} edit the catalogue's story names (verified without it)")
    fix = (f"export with opset >= {target} (`torch.onnx.export(..., opset_version={target})`): the opset-"
           f"{case.opset} form of {what} computes otherwise than torch (or let `drifttui repair` convert the file)")
    return Patch(spec, lowering_class("", [node.op_type] if node is not None else []), why, fix, "export",
                 module=patch.module, nodes=list(patch.nodes))


def by_what_it_changed(case: Case, trials: list[Any], check: Callable[[list[Patch]], list[Any]]) -> list[Any]:
    """The first verified patch that converts the file and edits an attribute, re-labelled by its
    conversion when the conversion alone verifies too (``check`` verifies and holds patches on the
    case, as any candidate): that trial takes the patch's place, so the headline and ``repair`` follow
    what removed the drift."""
    k = next((i for i, t in enumerate(trials) if t.after.ok and not t.after.fails), None)
    alone = conversion_alone(case, trials[k].patch) if k is not None else None
    if alone is None:
        return trials
    tried = check([alone])
    if not (tried and tried[0].after.ok and not tried[0].after.fails):
        return trials
    return [*trials[:k], tried[0], *trials[k + 1:]]
