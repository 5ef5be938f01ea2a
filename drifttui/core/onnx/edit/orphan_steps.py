"""An Identity in a module's scope that gives an orphaned call's output a value of its own
(prepare/plan/orphans.py decides where).

The TorchScript exporter can lose a module's whole computation (an in-place update through a view,
issue 30 point 6): the module has no ONNX node, the value its consumer reads is the module's input
unchanged.  An ``Identity`` named inside the module (``/body/drifttui_orphan_0``) stands for it:
the module is mapped (its input the value it reads, its output the Identity's), its own error is
then what the exporter lost, and ``repair`` grafts a re-export in the Identity's place.

Two placements: before the consumer's first reader (the readers read the Identity's value), or, when
the value is a graph output, after its producer (the producer's value is renamed, the Identity keeps
the graph output's name, so the file's outputs do not change).  Numerically the same graph.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drifttui.core.onnx.edit.absorbed_views import _in_module
from drifttui.core.onnx.io import copy_model

ORPHAN = "drifttui_orphan_"


@dataclass(frozen=True)
class Step:
    """Call ``call`` (of ``module``)'s output is ``value`` unchanged: read by ``readers`` (node indices), or a graph output."""

    call: int
    module: str
    value: str
    readers: tuple[int, ...]

    def out_name(self, k: int) -> str:
        return self.value if not self.readers else f"{self.value}::{ORPHAN}{k}"


def with_steps(model: Any, steps: list[Step]) -> Any:
    """A copy of ``model`` with an Identity per step (one per value)."""
    import onnx

    out = copy_model(model)
    nodes = list(out.graph.node)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    before: dict[int, list[Any]] = {}
    after: dict[int, list[Any]] = {}
    seen: set[str] = set()
    for k, s in enumerate(steps):
        if s.value in seen or (not s.readers and s.value not in producer):
            continue
        seen.add(s.value)
        like = nodes[min(s.readers)] if s.readers else nodes[producer[s.value]]
        name, meta = _in_module(like, s.module, f"{ORPHAN}{k}")
        if s.readers:
            src = s.value
            for r in s.readers:
                nodes[r].input[:] = [s.out_name(k) if v == s.value else v for v in nodes[r].input]
            put, at = before, min(s.readers)
        else:
            src = f"{s.value}::{ORPHAN}in{k}"
            for n in nodes:
                n.input[:] = [src if v == s.value else v for v in n.input]
            p = nodes[producer[s.value]]
            p.output[:] = [src if v == s.value else v for v in p.output]
            put, at = after, producer[s.value]
        node = onnx.helper.make_node("Identity", [src], [s.out_name(k)], name=name)
        for key, value in meta:
            node.metadata_props.add(key=key, value=value)
        put.setdefault(at, []).append(node)
    del out.graph.node[:]
    for i, n in enumerate(nodes):
        out.graph.node.extend(before.get(i, []))
        out.graph.node.append(n)
        out.graph.node.extend(after.get(i, []))
    return out
