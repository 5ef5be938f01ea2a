"""Graph edit: a widening Cast moved before the op it follows (``causes/propose/numerics/cast_first.py``).

torch applies an op's ``dtype=`` argument (``softmax``, ``log_softmax``, ``softmin``, ``mean``, ``sum``) to the
*input*: "the input tensor is casted to dtype before the operation is performed", so ``F.log_softmax(x_half,
-1, dtype=torch.float32)`` computes in float32.  A lowering that computes the op in the input's type and casts
its result (``Cast(LogSoftmax(x), to=float)``) keeps float16 roundings in a float32 result.  ``cast_first``
computes the named nodes in the Cast's type: each of their inputs of the narrower float type from outside the set
is Cast to the wider type at its reader, their outputs become wide values (the widening Cast reads the op's), and
a reader outside the set (or the graph output) keeps the value's name and type through a Cast back.  The set is
the op alone, or the op and the narrow nodes that feed only it up to an explicit narrowing Cast (``chain``): ONNX
Runtime's CPU computes those float16 nodes in float32 through Casts it inserts and drops the rounding of an
inserted Cast that a Cast back to float32 reads, so widening the op alone can lose roundings torch keeps); the
values in ``round`` (the chain's own outputs: torch rounds each float16 op's output) are read through an explicit
``Cast(Cast(y, narrow), wide)`` pair, which ONNX Runtime keeps.  Spec: ``node`` (the op), ``nodes`` (the set,
the op first), ``cast`` (the widening Cast reading the op), ``to`` (its type), ``narrow`` (the narrower elem type), ``inputs`` (values from
outside the set, read wide), ``round`` (values of the set read rounded to the narrow type).

The other direction, ``round_first``: ``special_log_softmax(x, dtype=torch.float16)`` of a float32 ``x`` casts
``x`` to float16 and computes in float16, where both exporters compute ``LogSoftmax`` in float32 and narrow its
result (``Cast(LogSoftmax(x), to=float16)``).  The op's inputs named in ``inputs`` are read through an explicit
``Cast(Cast(v, narrow), wide)`` pair (which ONNX Runtime keeps): the op computes on torch's rounded input in its
own type, and the narrowing Cast after it rounds its result as torch's float16 op does.  Spec: ``node``, ``cast``
(the narrowing Cast reading it), ``narrow`` (its type), ``wide`` (the op's type), ``inputs``.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.onnx.edit.rewriting import find_node, scoped, splice_sorted

FLOATS = (1, 10, 11, 16)        # float, float16, double, bfloat16


def _wide(value: str) -> str:
    return f"{value}/drifttui_wide"


def _checked(model: Any, spec: dict[str, Any]) -> tuple[list[Any], Any, int, int]:
    by_name = {n.name: n for n in model.graph.node}
    names = list(spec.get("nodes") or [spec["node"]])
    inside, cast = [by_name.get(k) for k in names], by_name.get(spec.get("cast", ""))
    if any(n is None for n in inside) or cast is None or cast.op_type != "Cast":
        raise ValueError(f"no node {spec['node']!r} read by a Cast {spec.get('cast')!r}")
    to, narrow = int(spec["to"]), int(spec["narrow"])
    if to not in FLOATS or narrow not in FLOATS or to == narrow:
        raise ValueError("the Cast does not change one float type into another")
    if cast.input[0] not in inside[0].output:
        raise ValueError(f"{cast.name} does not read {inside[0].name}'s output")
    return inside, cast, to, narrow


def apply_cast_first(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    inside, cast, to, narrow = _checked(model, spec)
    made = {o for n in inside for o in n.output if o}
    wide_inputs = set(spec.get("inputs") or [])
    new: list[Any] = []
    read_in: dict[str, str] = {}
    rounded = set(spec.get("round") or []) & made
    for n in inside:
        for i, v in enumerate(n.input):
            if v in made:
                n.input[i] = f"{_wide(v)}/rounded" if v in rounded else _wide(v)
            elif v in wide_inputs:
                if v not in read_in:
                    read_in[v] = f"{n.name}/drifttui_in{len(read_in)}"
                    new += scoped(n, [helper.make_node("Cast", [v], [read_in[v]], name=read_in[v], to=to)])
                n.input[i] = read_in[v]
        for i, v in enumerate(n.output):
            if v:
                n.output[i] = _wide(v)
    cast.input[0] = _wide(cast.input[0])
    ids = {id(n) for n in inside} | {id(cast)}
    outside = {v for n in model.graph.node if id(n) not in ids for v in n.input} \
        | {o.name for o in model.graph.output}
    for n in inside:
        for w in n.output:
            v = w[: -len("/drifttui_wide")]
            if w and (v in outside or v in rounded):
                new += scoped(n, [helper.make_node("Cast", [w], [v], name=f"{w}/back", to=narrow)])
            if w and v in rounded:      # an explicit pair ONNX Runtime keeps: torch rounds each narrow op's output
                new += scoped(n, [helper.make_node("Cast", [v], [f"{w}/rounded"], name=f"{w}/rounded", to=to)])
    splice_sorted(model, new)


def apply_round_first(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    node, cast = find_node(model, spec["node"]), find_node(model, spec.get("cast", ""), "Cast")
    narrow, wide = int(spec["narrow"]), int(spec["wide"])
    if narrow not in FLOATS or wide not in FLOATS or narrow == wide or cast.input[0] not in node.output:
        raise ValueError(f"{cast.name} does not narrow {node.name}'s float output")
    new: list[Any] = []
    for v in sorted(set(spec.get("inputs") or []) & set(node.input)):
        p = f"{node.name}/drifttui_round{len(new) // 2}"
        new += [helper.make_node("Cast", [v], [f"{p}/narrow"], name=f"{p}/narrow", to=narrow),
                helper.make_node("Cast", [f"{p}/narrow"], [p], name=p, to=wide)]
        node.input[:] = [p if w == v else w for w in node.input]
    if not new:
        raise ValueError(f"none of {spec.get('inputs')} is read by {node.name}")
    splice_sorted(model, new, anchor=node)


APPLY = {"cast_first": apply_cast_first, "round_first": apply_round_first}
