"""Equivalent rewrites that work around ONNX Runtime kernel deviations.

When the ONNX reference implementation agrees with PyTorch and ONNX Runtime does not (kind
``runtime``), the graph is right and the kernel is wrong: the fix to deploy is the same
computation written with ops whose kernels are right.  Each entry of :data:`CATALOGUE` is one
such rewrite, anchored at one node and tried as an ordinary patch
(``{"op": "rewrite", "rewrite": "workaround", "form": NAME, "node": N}``), so it is verified like
any other and ``repair`` applies it to the whole file.  The finding keeps ``kind: runtime``: the
upstream bug is in ONNX Runtime.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from drifttui.core.onnx.edit.graft.splice import toposort
from drifttui.core.onnx.edit.rewriting import scoped
from drifttui.core.onnx.edit.lowerings.stable_forms import is_one

# one rewrite: (model, anchor node, dtype of its input, unique prefix) -> (nodes to remove, nodes to add)
Build = Callable[[Any, Any, Any, str], tuple[list[Any], list[Any], list[Any]]]


@dataclass(frozen=True)
class Workaround:
    form: str
    op: str               # the anchor node's op_type
    what: str             # the equivalent formulation, for the message
    build: Build


def _const(name: str, value: float, dtype: Any) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _readers(model: Any, value: str) -> list[Any]:
    return [n for n in model.graph.node if value in n.input]


def _neg_softplus_neg(x: str, out: str, p: str) -> list[Any]:
    from onnx import helper

    return [helper.make_node("Neg", [x], [f"{p}/negx"], name=f"{p}/neg_in"),
            helper.make_node("Softplus", [f"{p}/negx"], [f"{p}/sp"], name=f"{p}/softplus"),
            helper.make_node("Neg", [f"{p}/sp"], [out], name=f"{p}/neg_out")]


def _log_sigmoid(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Log(Sigmoid(x)) -> -Softplus(-x) and Log(1 - Sigmoid(x)) -> -Softplus(x) (TorchScript's
    binary_cross_entropy_with_logits): no intermediate that underflows to 0 before the Log."""
    return _log_sigmoids(model, node, p, torch_form=False)


def _log_sigmoid_torch(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Log(Sigmoid(x)) -> -Softplus(-x) and Log(1 - Sigmoid(x)) -> -Softplus(-x) - x: torch's own formula (its
    binary_cross_entropy_with_logits computes (1 - t) x - log_sigmoid(x)), whose roundings in float16 are torch's."""
    return _log_sigmoids(model, node, p, torch_form=True)


def _log_sigmoids(model: Any, node: Any, p: str, torch_form: bool) -> tuple[list[Any], list[Any], list[Any]]:
    from onnx import helper

    x = node.input[0]
    logs = [n for n in _readers(model, node.output[0]) if n.op_type == "Log"]
    new = [m for k, log in enumerate(logs) for m in _neg_softplus_neg(x, log.output[0], f"{p}{k}")]
    subs = [n for n in _readers(model, node.output[0]) if n.op_type == "Sub" and list(n.input[1:]) == [node.output[0]]
            and is_one(model, n.input[0])]
    for j, log in enumerate(n for s in subs for n in _readers(model, s.output[0]) if n.op_type == "Log"):
        q = f"{p}/one_minus{j}"
        if torch_form:
            new += [*_neg_softplus_neg(x, f"{q}/logsig", q),
                    helper.make_node("Sub", [f"{q}/logsig", x], [log.output[0]], name=f"{q}/minus_x")]
        else:
            new += [helper.make_node("Softplus", [x], [f"{q}/sp"], name=f"{q}/softplus"),
                    helper.make_node("Neg", [f"{q}/sp"], [log.output[0]], name=f"{q}/neg")]
        logs.append(log)
    if not logs:
        raise ValueError("the Sigmoid's output is not read by a Log")
    if torch_form and not subs:
        raise ValueError("no Log(1 - Sigmoid(x)): the same rewrite as log_sigmoid")
    return logs, new, []


def _safe_sigmoid(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Sigmoid(x) -> Exp(-Softplus(-x)): exact in the tail where the kernel returns 0."""
    from onnx import helper

    new = _neg_softplus_neg(node.input[0], f"{p}/logsig", p)
    new.append(helper.make_node("Exp", [f"{p}/logsig"], [node.output[0]], name=f"{p}/exp"))
    return [node], new, []


def _softplus(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Softplus(x) -> Relu(x) + Log(1 + Exp(-|x|)): no overflow, no cancellation."""
    from onnx import helper

    x = node.input[0]
    new = [helper.make_node("Relu", [x], [f"{p}/relu"], name=f"{p}/relu"),
           helper.make_node("Abs", [x], [f"{p}/abs"], name=f"{p}/abs"),
           helper.make_node("Neg", [f"{p}/abs"], [f"{p}/nabs"], name=f"{p}/neg"),
           helper.make_node("Exp", [f"{p}/nabs"], [f"{p}/e"], name=f"{p}/exp"),
           helper.make_node("Add", [f"{p}/e", f"{p}/one"], [f"{p}/e1"], name=f"{p}/add1"),
           helper.make_node("Log", [f"{p}/e1"], [f"{p}/l"], name=f"{p}/log"),
           helper.make_node("Add", [f"{p}/relu", f"{p}/l"], [node.output[0]], name=f"{p}/sum")]
    return [node], new, [_const(f"{p}/one", 1.0, dtype)]


def _gelu_erf(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Gelu(x) (exact) -> 0.5 x (1 + Erf(x / sqrt 2))."""
    from onnx import helper

    approx = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "approximate"), b"none")
    if approx not in (b"none", "none"):
        raise ValueError("only the exact Gelu has an Erf form")
    x = node.input[0]
    new = [helper.make_node("Mul", [x, f"{p}/rsqrt2"], [f"{p}/xs"], name=f"{p}/scale"),
           helper.make_node("Erf", [f"{p}/xs"], [f"{p}/erf"], name=f"{p}/erf"),
           helper.make_node("Add", [f"{p}/erf", f"{p}/one"], [f"{p}/e1"], name=f"{p}/add1"),
           helper.make_node("Mul", [x, f"{p}/e1"], [f"{p}/xe"], name=f"{p}/mul"),
           helper.make_node("Mul", [f"{p}/xe", f"{p}/half"], [node.output[0]], name=f"{p}/half")]
    return [node], new, [_const(f"{p}/rsqrt2", 1 / math.sqrt(2), dtype), _const(f"{p}/one", 1.0, dtype),
                         _const(f"{p}/half", 0.5, dtype)]


def _hardswish(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """HardSwish(x) -> x * Clip(x + 3, 0, 6) / 6."""
    from onnx import helper

    x = node.input[0]
    new = [helper.make_node("Add", [x, f"{p}/three"], [f"{p}/x3"], name=f"{p}/add3"),
           helper.make_node("Clip", [f"{p}/x3", f"{p}/zero", f"{p}/six"], [f"{p}/c"], name=f"{p}/clip"),
           helper.make_node("Mul", [x, f"{p}/c"], [f"{p}/xc"], name=f"{p}/mul"),
           helper.make_node("Div", [f"{p}/xc", f"{p}/six"], [node.output[0]], name=f"{p}/div")]
    return [node], new, [_const(f"{p}/three", 3.0, dtype), _const(f"{p}/zero", 0.0, dtype),
                         _const(f"{p}/six", 6.0, dtype)]


def _reciprocal(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Reciprocal(x) -> 1 / x."""
    from onnx import helper

    return [node], [helper.make_node("Div", [f"{p}/one", node.input[0]], [node.output[0]], name=f"{p}/div")], \
        [_const(f"{p}/one", 1.0, dtype)]


def _sigmoid_recip(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Sigmoid(x) -> 1 / (1 + Exp(-x)): the formula torch's CPU kernel evaluates, so its float32
    rounding near 1 (what ``log1p(-sigmoid(x))`` or ``1 - sigmoid(x)`` amplify) is torch's."""
    from onnx import helper

    x = node.input[0]
    new = [helper.make_node("Neg", [x], [f"{p}/negx"], name=f"{p}/neg"),
           helper.make_node("Exp", [f"{p}/negx"], [f"{p}/e"], name=f"{p}/exp"),
           helper.make_node("Add", [f"{p}/e", f"{p}/one"], [f"{p}/e1"], name=f"{p}/add1"),
           helper.make_node("Div", [f"{p}/one", f"{p}/e1"], [node.output[0]], name=f"{p}/div")]
    return [node], new, [_const(f"{p}/one", 1.0, dtype)]


def _tanh_exp(model: Any, node: Any, dtype: Any, p: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Tanh(x) -> Sign(x) (1 - 2 / (Exp(2|x|) + 1)): correctly rounded near +-1, where ONNX
    Runtime's Tanh is ulps off and saturates to 1 early (``log(1 - tanh(x))`` amplifies it)."""
    from onnx import helper

    x = node.input[0]
    new = [helper.make_node("Abs", [x], [f"{p}/abs"], name=f"{p}/abs"),
           helper.make_node("Mul", [f"{p}/abs", f"{p}/two"], [f"{p}/a2"], name=f"{p}/mul2"),
           helper.make_node("Exp", [f"{p}/a2"], [f"{p}/e"], name=f"{p}/exp"),
           helper.make_node("Add", [f"{p}/e", f"{p}/one"], [f"{p}/e1"], name=f"{p}/add1"),
           helper.make_node("Div", [f"{p}/two", f"{p}/e1"], [f"{p}/q"], name=f"{p}/div"),
           helper.make_node("Sub", [f"{p}/one", f"{p}/q"], [f"{p}/t"], name=f"{p}/sub"),
           helper.make_node("Sign", [x], [f"{p}/sign"], name=f"{p}/sign"),
           helper.make_node("Mul", [f"{p}/sign", f"{p}/t"], [node.output[0]], name=f"{p}/signed")]
    return [node], new, [_const(f"{p}/one", 1.0, dtype), _const(f"{p}/two", 2.0, dtype)]


CATALOGUE = [Workaround("log_sigmoid", "Sigmoid", "Log(Sigmoid(x)) as -Softplus(-x) (Log(1 - Sigmoid(x)) as -Softplus(x))",
                        _log_sigmoid),
             Workaround("log_sigmoid_torch", "Sigmoid", "Log(Sigmoid(x)) as -Softplus(-x), Log(1 - Sigmoid(x)) as "
                        "-Softplus(-x) - x (torch's formula, rounded as torch rounds it)", _log_sigmoid_torch),
             Workaround("safe_sigmoid", "Sigmoid", "Sigmoid(x) as Exp(-Softplus(-x))", _safe_sigmoid),
             Workaround("tanh_exp", "Tanh", "Tanh(x) as Sign(x) (1 - 2 / (Exp(2|x|) + 1))", _tanh_exp),
             Workaround("softplus", "Softplus", "Softplus(x) as Relu(x) + Log(1 + Exp(-|x|))", _softplus),
             Workaround("gelu_erf", "Gelu", "Gelu(x) as 0.5 x (1 + Erf(x / sqrt 2))", _gelu_erf),
             Workaround("hardswish", "HardSwish", "HardSwish(x) as x Clip(x + 3, 0, 6) / 6", _hardswish),
             Workaround("reciprocal", "Reciprocal", "Reciprocal(x) as 1 / x", _reciprocal),
             # last: exp(-x) overflows for x < -88 (0 where -Softplus(-x) stays exact), so it heads only
             # when the stable forms do not verify (torch's own rounding near 1 is what is compared)
             Workaround("sigmoid_recip", "Sigmoid", "Sigmoid(x) as 1 / (1 + Exp(-x)) (torch's formula)",
                        _sigmoid_recip)]
RANK = {w.form: k for k, w in enumerate(CATALOGUE)}
BY_FORM = {w.form: w for w in CATALOGUE}


def forms_for(node: Any) -> Iterator[Workaround]:
    return (w for w in CATALOGUE if w.op == node.op_type)


def apply_workaround(model: Any, node: Any, form: str, dtype: Any) -> None:
    """Rewrite ``model`` in place: the workaround ``form`` at ``node`` (ValueError when it does not fit)."""
    w = BY_FORM.get(form)
    if w is None or node.op_type != w.op:
        raise ValueError(f"no workaround {form!r} for a {node.op_type}")
    base = f"{node.name or node.output[0]}/drifttui_{form}"
    drop, new, consts = w.build(model, node, dtype, base)
    scoped(node, new)
    nodes = list(model.graph.node)
    at = min(nodes.index(n) for n in drop)
    keep = [n for n in nodes if all(n is not d for d in drop)]
    keep[at:at] = new
    del model.graph.node[:]
    model.graph.node.extend(toposort(keep))
    model.graph.initializer.extend(consts)
