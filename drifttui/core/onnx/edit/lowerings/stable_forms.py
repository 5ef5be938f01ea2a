"""``log1p``, ``expm1`` and ``logaddexp`` lowered to their naive forms, and the accurate forms that
replace them.

Both exporters lower ``torch.log1p(x)`` to ``Log(Add(x, 1))`` and the dynamo exporter lowers
``torch.expm1(x)`` to ``Sub(Exp(x), 1)`` (ONNX has neither op; upstream: pytorch/pytorch#24808).
For ``|x|`` far below 1 the float32 sum ``1 + x`` (or ``exp(x)``) drops the low bits of ``x``:
the relative error reaches 100% where torch's kernels are exact to an ulp, the reference
evaluator computes the same (an export mistranslation, ``kind: export``).

The accurate forms use only the values the naive ones compute (Kahan's identities):

* ``log1p(x) = x * Log(u) / (u - 1)`` with ``u = 1 + x``, and ``x`` where ``u == 1``;
* ``expm1(x) = (u - 1) * x / Log(u)`` with ``u = Exp(x)``, ``x`` where ``u == 1``, and ``u - 1``
  where that is ``-1`` or ``u`` is infinite.

The dynamo exporter lowers ``torch.logaddexp(a, b)`` to ``Log(Exp(a) + Exp(b))``: ``Exp`` overflows
to inf for arguments above ~88 (and underflows to 0 below ~-103) where torch's kernel computes
``max(a, b) + log1p(exp(-|a - b|))``; that form replaces it (``apply_logaddexp``).

``match_log1p`` / ``match_expm1`` / ``match_logaddexp`` recognise the lowered pair at its last node; the edits rewrite
a model in place (ValueError when the pattern is not there) and keep the output's name.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.edit.rewriting import (find_node, input_dtype, replace_with, scoped, splice_sorted,
                                               static_value)


def is_one(model: Any, name: str) -> bool:
    v = static_value(model, name)
    return v is not None and v.size == 1 and float(v.ravel()[0]) == 1.0


def _producer(model: Any, value: str) -> Optional[Any]:
    return next((n for n in model.graph.node if value in n.output), None)


def match_log1p(model: Any, node: Any) -> Optional[tuple[Any, str]]:
    """(the Add, x) when ``node`` is a Log of ``Add(x, 1)``."""
    if node.op_type != "Log":
        return None
    add = _producer(model, node.input[0])
    if add is None or add.op_type != "Add":
        return None
    for k in (0, 1):
        if is_one(model, add.input[1 - k]) and not is_one(model, add.input[k]):
            return add, add.input[k]
    return None


def match_expm1(model: Any, node: Any) -> Optional[tuple[Any, str]]:
    """(the Exp, x) when ``node`` is ``Sub(Exp(x), 1)``."""
    if node.op_type != "Sub" or not is_one(model, node.input[1]):
        return None
    exp = _producer(model, node.input[0])
    return (exp, exp.input[0]) if exp is not None and exp.op_type == "Exp" else None


def match_logaddexp(model: Any, node: Any) -> Optional[tuple[str, str]]:
    """(a, b) when ``node`` is ``Log(Add(Exp(a), Exp(b)))``."""
    if node.op_type != "Log":
        return None
    add = _producer(model, node.input[0])
    if add is None or add.op_type != "Add" or len(add.input) != 2:
        return None
    exps = [_producer(model, v) for v in add.input]
    if any(e is None or e.op_type != "Exp" for e in exps):
        return None
    return exps[0].input[0], exps[1].input[0]


def naive_nodes(model: Any, node: Any, rewrite: str) -> list[str]:
    """The names of the nodes of ``rewrite``'s naive form that ends at ``node``, in the graph's order (``Add, Log``
    of log1p; ``Exp, Exp, Add, Log`` of logaddexp; ``Exp, Sub`` of expm1): what the accurate form replaces, so a
    verified rewrite is told by the torch call those nodes lower, not by its last node alone."""
    if rewrite == "log1p" and (hit := match_log1p(model, node)) is not None:
        mine = [hit[0], node]
    elif rewrite == "expm1" and (hit := match_expm1(model, node)) is not None:
        mine = [hit[0], node]
    elif rewrite == "logaddexp" and match_logaddexp(model, node) is not None:
        add = _producer(model, node.input[0])
        mine = [_producer(model, v) for v in add.input] + [add, node]
    else:
        return [node.name]
    names = {n.name for n in mine}
    return [n.name for n in model.graph.node if n.name in names]


def _splice(model: Any, anchor: Any, new: list[Any], consts: dict[str, float], dtype: Any) -> None:
    from onnx import numpy_helper

    scoped(anchor, new)
    nodes = list(model.graph.node)
    at = nodes.index(anchor) + 1
    nodes[at:at] = new
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(v, dtype=dtype), k) for k, v in consts.items())


def apply_log1p(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    log = find_node(model, spec["node"], "Log")
    m = match_log1p(model, log)
    if m is None:
        raise ValueError(f"{log.name} is not Log(1 + x)")
    add, x = m
    u, out = add.output[0], log.output[0]
    p = f"{log.name or out}/drifttui_log1p"
    log.output[0] = f"{p}/log"
    new = [helper.make_node("Sub", [u, f"{p}/one"], [f"{p}/d"], name=f"{p}/sub"),
           helper.make_node("Mul", [x, f"{p}/log"], [f"{p}/xl"], name=f"{p}/mul"),
           helper.make_node("Div", [f"{p}/xl", f"{p}/d"], [f"{p}/r"], name=f"{p}/div"),
           helper.make_node("Equal", [u, f"{p}/one"], [f"{p}/exact"], name=f"{p}/equal"),
           helper.make_node("Where", [f"{p}/exact", x, f"{p}/r"], [out], name=f"{p}/where")]
    _splice(model, log, new, {f"{p}/one": 1.0}, input_dtype(model, x))


def apply_expm1(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper

    sub = find_node(model, spec["node"], "Sub")
    m = match_expm1(model, sub)
    if m is None:
        raise ValueError(f"{sub.name} is not Exp(x) - 1")
    exp, x = m
    u, out = exp.output[0], sub.output[0]
    p = f"{sub.name or out}/drifttui_expm1"
    sub.output[0] = d = f"{p}/d"
    new = [helper.make_node("Log", [u], [f"{p}/log"], name=f"{p}/log"),
           helper.make_node("Mul", [d, x], [f"{p}/dx"], name=f"{p}/mul"),
           helper.make_node("Div", [f"{p}/dx", f"{p}/log"], [f"{p}/r"], name=f"{p}/div"),
           helper.make_node("Equal", [d, f"{p}/minus_one"], [f"{p}/neg"], name=f"{p}/eq_neg"),
           helper.make_node("IsInf", [u], [f"{p}/inf"], name=f"{p}/isinf"),
           helper.make_node("Or", [f"{p}/neg", f"{p}/inf"], [f"{p}/direct"], name=f"{p}/or"),
           helper.make_node("Where", [f"{p}/direct", d, f"{p}/r"], [f"{p}/r2"], name=f"{p}/where_d"),
           helper.make_node("Equal", [u, f"{p}/one"], [f"{p}/exact"], name=f"{p}/eq_one"),
           helper.make_node("Where", [f"{p}/exact", x, f"{p}/r2"], [out], name=f"{p}/where")]
    _splice(model, sub, new, {f"{p}/one": 1.0, f"{p}/minus_one": -1.0}, input_dtype(model, x))


def apply_logaddexp(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    log = find_node(model, spec["node"], "Log")
    m = match_logaddexp(model, log)
    if m is None:
        raise ValueError(f"{log.name} is not Log(Exp(a) + Exp(b))")
    a, b = m
    out = log.output[0]
    p = f"{log.name or out}/drifttui_logaddexp"
    new = [helper.make_node("Max", [a, b], [f"{p}/max"], name=f"{p}/max"),
           helper.make_node("Sub", [a, b], [f"{p}/d"], name=f"{p}/sub"),
           helper.make_node("Abs", [f"{p}/d"], [f"{p}/abs"], name=f"{p}/abs"),
           helper.make_node("Neg", [f"{p}/abs"], [f"{p}/nabs"], name=f"{p}/neg"),
           helper.make_node("Exp", [f"{p}/nabs"], [f"{p}/e"], name=f"{p}/exp"),
           helper.make_node("Add", [f"{p}/e", f"{p}/one"], [f"{p}/u"], name=f"{p}/add1"),
           helper.make_node("Log", [f"{p}/u"], [f"{p}/l"], name=f"{p}/log"),
           helper.make_node("Add", [f"{p}/max", f"{p}/l"], [out], name=f"{p}/sum")]
    splice_sorted(model, new, [numpy_helper.from_array(np.asarray(1.0, dtype=input_dtype(model, a)), f"{p}/one")],
                  anchor=log, drop=[log])


#: the ONNX ops ONNX Runtime's CPU kernels compute through a float32 ``exp(z) - 1`` (measured: Celu's
#: ``alpha * (exp(x / alpha) - 1)`` is 0 units off that naive form and 10^5 off the exact value where
#: ``|x / alpha| << 1``, then scaled back up by ``|alpha|``); what each computes for ``x <= 0`` as (z, factor)
ELU_FAMILY = {"Elu": ("x", "alpha"), "Celu": ("x/alpha", "alpha"), "Selu": ("x", "gamma*alpha")}


def _attr(node: Any, name: str, default: float) -> float:
    return next((a.f for a in node.attribute if a.name == name), default)


def apply_elu_expm1(model: Any, spec: dict[str, Any]) -> None:
    """An Elu / Celu / Selu node written out by its ONNX formula, its ``exp(z) - 1`` by the accurate ``expm1``
    form (``apply_expm1``): ``Where(x > 0, slope * x, factor * expm1(z))``."""
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"])
    if node.op_type not in ELU_FAMILY:
        raise ValueError(f"{node.name} is not one of {sorted(ELU_FAMILY)}")
    alpha = _attr(node, "alpha", {"Selu": 1.67326319217681884765625}.get(node.op_type, 1.0))
    gamma = _attr(node, "gamma", 1.05070102214813232421875) if node.op_type == "Selu" else 1.0
    x, out = node.input[0], node.output[0]
    p = f"{node.name or out}/drifttui_elu"
    z = f"{p}/z" if node.op_type == "Celu" else x
    new = ([helper.make_node("Div", [x, f"{p}/alpha"], [z], name=f"{p}/div")] if node.op_type == "Celu" else []) + [
        helper.make_node("Exp", [z], [f"{p}/u"], name=f"{p}/exp"),
        helper.make_node("Sub", [f"{p}/u", f"{p}/one"], [f"{p}/em1"], name=f"{p}/sub"),
        helper.make_node("Mul", [f"{p}/em1", f"{p}/factor"], [f"{p}/neg"], name=f"{p}/mul"),
        helper.make_node("Mul", [x, f"{p}/slope"], [f"{p}/pos"], name=f"{p}/mul_pos"),
        helper.make_node("Greater", [x, f"{p}/zero"], [f"{p}/gt"], name=f"{p}/gt"),
        helper.make_node("Where", [f"{p}/gt", f"{p}/pos", f"{p}/neg"], [out], name=f"{p}/where")]
    dtype = input_dtype(model, x)
    consts = {f"{p}/alpha": alpha, f"{p}/one": 1.0, f"{p}/factor": gamma * alpha, f"{p}/slope": gamma,
              f"{p}/zero": 0.0}
    replace_with(model, node, new, [numpy_helper.from_array(np.asarray(v, dtype=dtype), k) for k, v in consts.items()])
    apply_expm1(model, {"node": next(n.name for n in model.graph.node if n.output[:1] == [f"{p}/em1"])})
