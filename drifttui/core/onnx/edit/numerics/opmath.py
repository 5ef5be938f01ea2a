"""Graph edit: float16 / bfloat16 nodes computed in float32 with explicit Casts (the opmath counterfactual of
``causes/propose/numerics/opmath.py``).

torch's CPU computes a float16 or bfloat16 op in float32 (its "opmath" type) and rounds the op's output once;
a composite op (``var``, ``softmax``, ``layer_norm``) keeps its intermediates in float32.  A file lowers such an
op to several float16 nodes, each rounded; and ONNX Runtime's CPU, which runs most float16 ops through Casts it
inserts, drops the rounding of a ``Cast(float -> float16)`` whose reader it casts back to float32 (its
inserted Cast pair is removed: microsoft/onnxruntime#8787, #9915), so a value torch rounds is read unrounded.

``opmath_float32`` makes each named node compute in float32: its low-precision inputs from outside the set are
Cast to float32 at their readers, its outputs are float32 values (a Cast to float16 in the set casts to float32,
a float16 Constant is widened), and each of its outputs is Cast back to its type under its own name for readers
outside the set and for the graph's outputs.  Readers inside the set read the float32 value as it is, or, for the
values named in ``round``, that value rounded: ``Cast(Cast(y, float16), float)``, an explicit pair ONNX Runtime
keeps.  A Cast out of the set that reads a rounded value (``.half().to(torch.int8)``) reads that float32 value too
(the same number): ONNX Runtime's always-on RemoveDuplicateCastTransformer (run by its InsertCastTransformer, at
every level) merges ``Cast(float -> float16) -> Cast(float16 -> int8)`` into one Cast of the unrounded float (it
judges the second Cast's reverse, int8 -> float16, safe), but keeps a ``Cast(float -> float16)`` one of whose
readers is an explicit ``Cast(float16 -> float)`` (``UnsafeCast`` of its reverse: 32 -> 16 bits loses precision;
it visits the nodes in the file's order, so the first Cast, written before its reader, is judged first).
The rounding Cast is written only where it is read: an unread one would keep the pair in the cut-out origin
and be pruned from the file ``repair`` writes.  Spec: ``nodes`` (names), ``low`` ({output value: its elem
type}), ``inputs`` ({input value from outside the set: its elem type}), ``round`` (values torch rounds).
"""
from __future__ import annotations

from typing import Any

from drifttui.core.onnx.edit.rewriting import scoped, splice_sorted
from drifttui.core.onnx.weights import read_tensor

FLOAT = 1
LOW = (10, 16)              # float16, bfloat16
HELD = ("If", "Loop", "Scan", "EyeLike", "RandomNormalLike", "RandomUniformLike", "Bernoulli")


def _wide(value: str) -> str:
    return f"{value}/drifttui_f32"


def _widen_attr(node: Any) -> None:
    from onnx import numpy_helper

    for a in node.attribute:
        if node.op_type == "Cast" and a.name == "to" and a.i in LOW:
            a.i = FLOAT
        elif a.HasField("t") and a.t.data_type in LOW:
            a.t.CopyFrom(numpy_helper.from_array(read_tensor(a.t).astype("float32"), a.t.name))


def apply_opmath_float32(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    names = list(spec.get("nodes") or [spec["node"]])
    low, inputs, rounded = dict(spec.get("low") or {}), dict(spec.get("inputs") or {}), set(spec.get("round") or [])
    by_name = {n.name: n for n in model.graph.node}
    missing = [k for k in names if k not in by_name]
    if missing:
        raise ValueError(f"no node named {missing[0]!r}")
    inside = [by_name[k] for k in names]
    if any(n.op_type in HELD for n in inside):
        raise ValueError("a node of the set has no float32 form")
    made = {o for n in inside for o in n.output if o}
    if not made <= set(low):
        raise ValueError("an output of the set has no low-precision type given")
    new: list[Any] = []
    read_in: dict[str, str] = {}            # outside low-precision input -> its float32 cast
    # a float32 cast an earlier rewrite of the same file wrote (the origin's, then the calls inside it) is read again
    had = {o for n in model.graph.node if n.op_type == "Cast" for o in n.output if o.endswith("/drifttui_in32")}
    for n in inside:
        for i, v in enumerate(n.input):
            if v in made:
                n.input[i] = _wide(v) if v not in rounded else f"{_wide(v)}/rounded"
            elif v in inputs:
                if v not in read_in:
                    read_in[v] = f"{v}/drifttui_in32"
                    if read_in[v] not in had:
                        new += scoped(n, [helper.make_node("Cast", [v], [read_in[v]], name=read_in[v], to=FLOAT)])
                n.input[i] = read_in[v]
        for i, v in enumerate(n.output):
            if v:
                n.output[i] = _wide(v)
        _widen_attr(n)
    others = [n for n in model.graph.node if n.name not in set(names)]
    outside = {v for n in others for v in n.input} | {o.name for o in model.graph.output}
    read_inside = {v for n in inside for v in n.input}
    for n in inside:
        for w in n.output:
            v = w[: -len("/drifttui_f32")]
            casts = [r for r in others if r.op_type == "Cast" and v in r.input] if v in rounded else []
            keep = (v in rounded and f"{w}/rounded" in read_inside) or bool(casts)
            if v in outside or keep:
                new += scoped(n, [helper.make_node("Cast", [w], [v], name=f"{w}/back", to=int(low[v]))])
            if keep:
                new += scoped(n, [helper.make_node("Cast", [v], [f"{w}/rounded"], name=f"{w}/rounded", to=FLOAT)])
            for r in casts:     # a Cast out of the set reads the rounded float32: the pair ONNX Runtime keeps
                r.input[:] = [f"{w}/rounded" if x == v else x for x in r.input]
    splice_sorted(model, new)


APPLY = {"opmath_float32": apply_opmath_float32}
