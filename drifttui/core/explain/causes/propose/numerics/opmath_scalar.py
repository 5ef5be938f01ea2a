"""A Python scalar of a float16 / bfloat16 arithmetic op, computed as torch computes it (issue 30 point 8; a
generic patch, no catalogue entry).

torch's CPU binary kernels (``add``, ``sub``, ``mul``, ``div``) hold a wrapped Python number in their opmath type
(``iter.original_scalar_value<opmath_t>``: float32 for float16 and bfloat16) and round only the result, so
``t_half / 86400.0`` is ``t / 86400.0f`` rounded once.  Both exporters write the number as a constant of the
tensor's low type (TorchScript: a float16 ``Constant``; dynamo: an initializer ``scalar_tensor_default_N``): past
float16's 65504 it is inf (``t / 86400.0`` is 0 in the file, ``exp(-d2 / 80000.0)`` is 1), below its range 0, and
any other number one rounding away.  A functional-constant patch (``constants.py``) cannot help: the number has no
low-precision form.

For each low-precision ``Mul`` / ``Div`` / ``Add`` / ``Sub`` of the origin that reads a one-element low-precision
constant, torch's numbers for that call (the FX call the exporter recorded on the node, and the origin's torch
program, ``torch.export``ed and decomposed as the dynamo exporter does: its calls of the same ATen op and its
``aten.scalar_tensor`` calls, the form the decomposition gives a Python scalar) that round to that constant and
are not it give a patch: the node computed in float32 with the number, its result rounded once
(``onnx/edit/numerics/opmath_scalar.py``).  Class ``dtype`` (the precision the scalar is held in), kind ``export``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.fx_localise import fx_of, fx_scalars
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.weights import read_tensor

ATEN = {"Mul": "aten.mul", "Div": "aten.div", "Add": "aten.add", "Sub": "aten.sub"}
LOW_NAMES = {10: "float16", 16: "bfloat16"}
MAX = 8                     # patches per origin


def rounded(v: float, elem: int) -> float:
    """``v`` as a float16 (10) or bfloat16 (16) holds it: inf past the range, round to nearest even."""
    with np.errstate(over="ignore"):
        if elem == 10:
            return float(np.float16(v))
        bits = np.asarray(np.float32(v)).view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return float(np.asarray(bits.astype(np.uint32)).view(np.float32))


def _low_scalars(model: Any) -> dict[str, tuple[float, int]]:
    """Value name -> (its number, its element type) for every one-element float16 / bfloat16 initializer or
    Constant a node reads."""
    read = {v for n in model.graph.node for v in n.input}
    tensors = [(t.name, t) for t in model.graph.initializer]
    tensors += [(n.output[0], a.t) for n in model.graph.node if n.op_type == "Constant"
                for a in n.attribute if a.name == "value"]
    return {name: (float(np.asarray(read_tensor(t), np.float32).ravel()[0]), int(t.data_type))
            for name, t in tensors if name in read and t.data_type in LOW_NAMES and int(np.prod(t.dims)) == 1}


def _held_as(v: float, got: float, elem: int) -> bool:
    """torch's number ``v``, rounded to the low type, is the file's ``got`` and is not ``v``."""
    r = rounded(v, elem)
    return (r == got or (np.isnan(r) and np.isnan(got))) and r != float(np.float32(v))


def held_numbers(module: Any) -> dict[float, str]:
    """The origin module's one-element float32 parameters and buffers, and their magnitudes, each with what it is:
    a 0-dim float32 operand of a float16 op (a learned step, ``step.abs().clamp_min(eps)``) torch reads at float32,
    which the dynamo exporter folds into a float16 constant of the op (its type promotion casts the operand first)."""
    import torch

    if module is None:
        return {}
    out: dict[float, str] = {}
    for kind, named in (("parameter", module.named_parameters()), ("buffer", module.named_buffers())):
        for name, t in named:
            if t.numel() == 1 and t.dtype == torch.float32:
                v = float(t.detach().reshape(()))
                out.setdefault(v, f"float32 {kind} {name}")
                out.setdefault(abs(v), f"float32 {kind} {name} (its magnitude)")
    return out


def _numbers(node: Any, calls: Callable[[str], list[list[Optional[float]]]], held: Optional[dict[float, str]] = None
             ) -> list[float]:
    """torch's numbers for ``node``: its FX call's (a dynamo file), then the origin's torch program's calls of the
    same ATen op and its ``aten.scalar_tensor`` calls (the exporter's decomposition makes a Python scalar one), then
    ``held``: the origin module's one-element float32 tensors (``held_numbers``)."""
    fx = fx_of(node)
    own = [s for s in fx_scalars(node) if s is not None] if fx is not None and fx[1].startswith(ATEN[node.op_type]) \
        else []
    program = [a for prefix in (ATEN[node.op_type], "aten.scalar_tensor") for call in calls(prefix) for a in call
               if a is not None]
    return list(dict.fromkeys(own + program + list(held or [])))


def _patch(case: Case, node: Any, pos: int, name: str, got: float, want: float, elem: int,
           what: str = "Python scalar") -> Patch:
    low = LOW_NAMES[elem]
    held = f"{got:g}" + (f" (past {low}'s range)" if np.isinf(got) else " (below its range)" if got == 0 else "")
    why = (f"{node.op_type} {node.name} reads torch's {what} {want:g} as the {low} constant {held} ({name}): "
           f"torch's {ATEN[node.op_type]} holds " + ("a Python number" if what == "Python scalar" else "it") +
           " in float32 (its opmath) and rounds only the result, "
           f"the exporter wrote the number in the tensor's {low}; with the node computed in float32 with {want:g} "
           "and its result rounded once, the file computes what torch computes")
    fix = (f"compute that op in float32 in the model (`(x.float() {'/' if node.op_type == 'Div' else '*'} "
           f"{want:g}).to(x.dtype)`), or bring the number into {low}'s range (scale first); `drifttui repair` "
           "writes the node in float32 with the number")
    spec = {"op": "rewrite", "rewrite": "opmath_scalar", "node": node.name, "input": pos, "value": want,
            "low": elem, "name": name}
    return Patch(spec, "dtype", why, fix, "export", module=case.module, nodes=[node.name])


def opmath_scalar_patches(case: Case, calls: Callable[[str], list[list[Optional[float]]]],
                          held: Optional[dict[float, str]] = None) -> list[Patch]:
    """A ``sequence`` of every such node's first patch when more than one node reads one (a float16 chain
    ``(x * 1.7 + 0.3) / 0.6``: each number moves values, no one alone removes the drift), then one patch per
    (node, torch number); none for a file without such a node (torch's program is then never traced)."""
    scalars = _low_scalars(case.model)
    out: list[Patch] = []
    for node in case.model.graph.node:
        consts = [(i, v) for i, v in enumerate(node.input) if v in scalars] if node.op_type in ATEN else []
        if not consts or len(node.input) != 2:
            continue
        numbers, called = _numbers(node, calls, held), set(_numbers(node, calls))
        for pos, name in consts:
            got, elem = scalars[name]
            for want in (v for v in numbers if _held_as(v, got, elem)):
                what = (held or {}).get(want, "Python scalar") if want not in called else "Python scalar"
                out.append(_patch(case, node, pos, name, got, want, elem, what))
                if len(out) >= MAX:
                    return _with_chain(case, out)
    return _with_chain(case, out)


def _with_chain(case: Case, singles: list[Patch]) -> list[Patch]:
    """``singles`` after one ``sequence`` of each node's first patch, when they rewrite two nodes or more."""
    first: dict[str, Patch] = {}
    for p in singles:
        first.setdefault(p.spec["node"], p)
    if len(first) < 2:
        return singles
    every = list(first.values())
    said = "; ".join(f"{p.spec['node']} reads {p.spec['value']:g} as {p.spec['name']}" for p in every)
    why = (f"{len(every)} float16 / bfloat16 arithmetic nodes read torch's Python scalars in the tensor's low type "
           f"({said}): torch's add / sub / mul / div hold each Python number in float32 (its opmath) and round only "
           "the result; with every such node computed in float32 with torch's number and its result rounded once, "
           "the file computes what torch computes")
    fix = ("compute that arithmetic in float32 in the model (`x.float()` before it, `.to(x.dtype)` after), so each "
           "Python number is held as torch holds it; `drifttui repair` writes the nodes in float32 with the numbers")
    chain = Patch({"op": "sequence", "patches": [p.spec for p in every]}, "dtype", why, fix, "export",
                  module=case.module, nodes=[p.spec["node"] for p in every])
    return [chain] + singles
