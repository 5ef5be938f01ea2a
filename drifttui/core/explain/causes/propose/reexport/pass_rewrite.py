"""Whether an exporter pass that runs after the lowering made the drift, and what it changed.

Two re-exports of the origin leave a pass out: the dynamo exporter without its ONNX optimizer and the
TorchScript exporter without its ONNX peephole pass (model/peephole.py).  When one computes what torch
computes, the pass is named only if the contrast proves it: the same exporter *with* the pass is exported
too and must not compute what torch computes.  If it does, the pass is innocent and the variant proves
nothing (``Rewrite.variant`` None): the re-exports after it (another exporter, today's exporter for a
user's file) are tried as before.  The change the pass made is told by the ops the graph with the pass
has in place of the graph without it (optimizer_diff.optimizer_change), and the first node of the file's
origin of an op the pass made (a fused node) is the one named.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from drifttui.core.explain.causes.propose.reexport.optimizer_diff import folded_change, made_ops, optimizer_change

_UNSEEN = "a rewrite that changed an attribute or a constant, not an op"


class Rewrite(NamedTuple):
    """What a left-out pass tells: the variant to tell (None: the pass is innocent, the variant proves nothing),
    what the pass changed ("" if nothing), the op types it put into the file's origin (a fused node's)."""

    variant: Any
    said: str = ""
    made: frozenset = frozenset()


def pass_rewrite(case: Any, model: Any, variant: Any, export: Callable[[Any], Any],
                 computes: Callable[[Any], bool], feeds: Optional[dict] = None) -> Rewrite:
    """What the left-out pass of ``variant`` changed (Rewrite) for ``model``, the origin
    re-exported by ``variant``, which computes what torch computes.  ``export(v)`` re-exports the
    origin by another variant ``v``, ``computes(m)`` runs a re-export on the origin's inputs.  For the optimizer,
    a constant its folding computed otherwise than ONNX Runtime computes the lowering's nodes (fed ``feeds``,
    ``model``'s inputs) is told first (optimizer_diff.folded_change), the file's origin holding the constant."""
    if variant.optimize and variant.peephole:
        return Rewrite(variant)
    who = "the optimizer" if not variant.optimize else "the peephole pass"
    try:
        with_pass = export(variant._replace(optimize=True, peephole=True))
    except Exception:  # noqa: BLE001 - the module does not export with the pass: no contrast, no claim
        return Rewrite(None)
    if computes(with_pass):
        return Rewrite(None)        # the pass is innocent: the exporter's version or the module's context is
    folded = folded_change(case.model, model, feeds or {}) if not variant.optimize else ""
    return Rewrite(variant, folded or optimizer_change(with_pass, model, who) or _UNSEEN,
                   frozenset(made_ops(with_pass, model)))
