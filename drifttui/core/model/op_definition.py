"""The record of one of drifttui's own definitions of ATen ops (issue 30 point 2): what the exporters lower
the ops as, the definition in core ATen ops that computes what torch computes, the class a re-trace through
it verifies with, the story and the source change it tells, and which calls it is about.

Each form module (``special_forms``, ``scatter_forms``, ``dof_forms``, ``pool_forms``, ``resize_forms``)
holds one ``DEFINITION``; ``retrace.DEFINITIONS`` lists them.  A new definition is one new module and one
line there: the re-trace (``retrace.reference_table``), the story (``propose/definitions.told``) and the
guard (``propose/reexport_story.fits``) read the record and nothing else.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

# how every fix text ends: the other route that needs no source change beyond the export call
RETRACE = ("re-trace the module with `make_fx(model, decomposition_table=drifttui.core.model.retrace."
           "reference_table())` before `torch.onnx.export`")


class OpDefinition(NamedTuple):
    check: str                                   # the class a re-trace through it verifies: stability | lowering
    lowered: dict[str, str]                      # ATen target (as FX prints it) -> what the exporters lower it as
    table: Callable[[], dict[Any, Callable[..., Any]]]   # ATen overload -> its definition in core ATen ops
    said: str                                    # the story: {exporter}, {target} and {lowered} filled in
    fix: Callable[[str], str]                    # the target matched -> the source change
    guard: Optional[Callable[[tuple, dict], bool]] = None  # whether a call (its FX args) is one it is about

    def key(self, target: str) -> Optional[str]:
        """The target as ``lowered`` names it (an overload it does not list falls back to ``.default``)."""
        if target in self.lowered:
            return target
        op = target.split(".")[1] if target.startswith("aten.") and "." in target[5:] else ""
        return f"aten.{op}.default" if op and f"aten.{op}.default" in self.lowered else None

    def story(self, target: str, exporter: str) -> str:
        key = self.key(target) or target
        return self.said.format(exporter=exporter, target=target, lowered=self.lowered[key])


def torch_name(op: str) -> str:
    """The torch call of an ATen op's name: special_erfcx -> torch.special.erfcx, erfc -> torch.erfc."""
    return f"torch.special.{op[len('special_'):]}" if op.startswith("special_") else f"torch.{op}"


def aten_op(target: str) -> str:
    """aten.var_mean.correction -> var_mean."""
    return target.split(".")[1] if target.startswith("aten.") else target
