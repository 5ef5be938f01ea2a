"""Two float16 mechanisms stacked at one origin: a Python scalar held in the tensor's low type and a rounding ONNX
Runtime drops (issue 30 point 8; a generic patch, no catalogue entry).

``opmath_scalar.py`` computes the arithmetic nodes that read a Python scalar in float32 with torch's number;
``opmath.py``'s ``per_op`` computes every float16 / bfloat16 node of the origin in float32 and rounds each output
with explicit Casts ONNX Runtime keeps.  Where the origin holds both stories (a QAT quantiser ``floor(x / 0.05 +
0.5) * 0.05`` in float16 after a ``x.half()`` whose rounding ONNX Runtime drops into the Gemm that reads it),
neither alone removes the drift: each leaves the other's values off, and a step function (``floor``, ``round``)
turns a last-bit difference into a whole step.  One ``sequence`` patch applies the scalar patches, then ``per_op``
over the origin's other low-precision nodes (the scalar nodes' outputs are, for it, float16 inputs from outside:
rounded once, as torch rounds each op).  Class ``dtype``, kind ``export``.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.numerics.wrapped_operand import with_wrapped
from drifttui.core.onnx.edit.patches import Patch


def stacked_opmath(case: Case, scalars: list[Patch], opmaths: list[Patch]) -> list[Patch]:
    """``opmath.py``'s patches, then the stacked forms: ``per_op`` with 0-dim float32 operands held in float32
    (``wrapped_operand.py``), and the scalar patches with ``per_op`` (``with_scalars``)."""
    return with_scalars(case, scalars, with_wrapped(case, opmaths))


def _singles(scalars: list[Patch]) -> list[dict[str, Any]]:
    """The scalar specs of the first scalar patch: a ``sequence``'s (every node's first number) or one node's."""
    if not scalars:
        return []
    spec = scalars[0].spec
    return list(spec["patches"]) if spec.get("op") == "sequence" else [spec]


def with_scalars(case: Case, scalars: list[Patch], opmaths: list[Patch]) -> list[Patch]:
    """``opmaths``, then one ``sequence`` of the scalar patches and ``per_op`` over the rest of the origin's
    low-precision nodes, when both exist and ``per_op`` keeps a node."""
    per_op = next((p for p in opmaths if p.spec.get("form") == "per_op"), None)
    singles = _singles(scalars)
    if per_op is None or not singles:
        return opmaths
    taken = {s["node"] for s in singles}
    rest = [n for n in per_op.spec["nodes"] if n not in taken]
    if not rest or len(rest) == len(per_op.spec["nodes"]):
        return opmaths
    made = {o for n in case.model.graph.node if n.name in taken for o in n.output if o}
    low = dict(per_op.spec["low"])
    spec = {**per_op.spec, "node": rest[0], "nodes": rest, "low": {k: v for k, v in low.items() if k not in made},
            "inputs": {**per_op.spec["inputs"], **{o: low[o] for o in made if o in low}},
            "round": [v for v in per_op.spec["round"] if v not in made]}
    head = scalars[0].why
    why = (f"two float16 stories at one origin: {head}; and {per_op.why[0].lower()}"
           f"{per_op.why[1:]}; with both (the scalar nodes computed in float32 with torch's numbers, every other node "
           "rounded at its output as torch rounds it) the file computes what torch computes")
    fix = ("compute that arithmetic in float32 in the model (`x.float()` before it, `.to(x.dtype)` after), or let "
           "`drifttui repair` write the nodes in float32 with torch's numbers and explicit roundings")
    # the story is the scalar's node's call (torch's mul by cos(m)), not the first float16 op the rounding reaches
    chain = Patch({"op": "sequence", "patches": [*singles, spec], "decisive": singles[0]["node"]}, "dtype", why, fix,
                  "export", module=case.module, nodes=[*taken, *rest])
    return [*opmaths, chain]
