"""A constant addend torch's graph computes and the file dropped (issue 30 point 8, held-out batch S).

torch's forward adds a number to a value (``torch.log(p + 1e-10)``, ``1.0 / (d + 1e-8)``, a denominator
``|a| |b| + 1e-8``) and the export writes no node for it: an optimizer took ``x + c`` with ``c`` close to 0 for a
no-op (the dynamo exporter's ``x + 0`` rule matches a constant within 1e-8 of 0), so the file reads ``x`` bare
where torch reads ``x + c``.  Nothing of the file holds ``c`` any more; torch's own graph (the origin's FX program,
``locate/fx_localise``) does.  Each number torch's graph adds (``aten.add`` / ``aten.sub`` of a number) that no
one-element constant of the file holds is tried as an ``Add`` before each computed input of the node the FX
localisation names as wrong: the story is the dropped addend, not the op that reads it, whose own lowering is
right; a wrong guess does not verify.  A NaN or inf the bare value makes (``log(0)``, ``1 / 0``) is the same
story, so these are tried before the guards of a singular point.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.constants import scalars
from drifttui.core.onnx.edit.patches import Patch

MAX = 12        # patches per origin: addends x the wrong node's inputs


def dropped_addend_patches(case: Case, loc: Any) -> list[Patch]:
    fx = getattr(loc, "fx", None) if loc is not None else None
    wrong = fx.wrong if fx is not None else None
    if wrong is None or not fx.addends:
        return []
    held = [abs(h) for h in scalars(case.model).values()]     # a Sub reads the number, an Add its negative
    missing = [c for c in dict.fromkeys(fx.addends) if c != 0.0 and not any(_held(c, h) for h in held)]
    static = {t.name for t in case.model.graph.initializer} | {
        v for n in case.model.graph.node if n.op_type == "Constant" for v in n.output}
    names = set(wrong.nodes)
    out: list[Patch] = []
    for node in (n for n in case.model.graph.node if n.name in names and n.op_type != "Constant"):
        for pos, src in enumerate(node.input):
            if not src or src in static:
                continue
            out.extend(_patch(case, node, pos, src, c, wrong.target) for c in missing)
    return out[:MAX]


def _held(c: float, h: float) -> bool:
    """``h`` is ``c``'s magnitude to float32's rounding (relative: 1e-10 is not 0, nor 2e-10)."""
    return abs(abs(c) - h) <= 1e-6 * abs(c)


def _patch(case: Case, node: Any, pos: int, src: str, c: float, target: str) -> Patch:
    return Patch({"op": "rewrite", "rewrite": "dropped_addend", "node": node.name, "input": pos, "value": c},
                 "lowering",
                 f"{node.op_type} {node.name} (the lowering of torch's {target}) reads {src} without torch's "
                 f"{'+' if c > 0 else '-'} {abs(c):g}: torch's graph adds the number {c:g} there and no constant of "
                 "the file holds it, the export dropped the addend (the dynamo exporter's optimizer removes an Add of "
                 f"a constant within 1e-8 of 0 as a no-op); with Add({src}, {c:g}) before it the file computes what "
                 "torch computes",
                 "keep the addend through the export: export with `torch.onnx.export(..., optimize=False)`, or write "
                 "an eps above 1e-8 (or `clamp(min=eps)`) in the model (`drifttui repair` puts the Add back in the "
                 "file)",
                 "export", module=case.module, nodes=[node.name])
