"""A Python number of a float64 op that the file holds at float32 precision (issue 30 point 8; a generic patch, no
catalogue entry).

torch keeps a Python scalar of a float64 op in double (``t_double * 0.1`` multiplies by 0.1).  The dynamo
exporter's type promotion makes the number ``aten.scalar_tensor(0.1, dtype=torch.float64)``, which torchlib
lowers as a Cast of a float32 constant to double (``cast_to`` in ``aten_scalar_tensor``), folded: the file's
float64 constant is 0.10000000149011612; TorchScript's ``round(decimals=)`` writes ``10 ** d`` as float32
tensors the same way.  A relative error of 1e-8 is amplified where float64 holds what float32 cannot: the phase
``2 * math.pi * t / 86400.0`` of a Unix time, a 100 ms bucket ``t // 0.1``, a GPS fix minus a reference point.

For each one-element float64 constant that an arithmetic, clamp, comparison or ``Where`` node of the origin reads
and float32 holds exactly (in a dynamo file, at a node whose FX call takes a Python number, positional, keyword
such as ``alpha=`` or as ``%scalar_tensor``: the optimizer shares one initializer between a float64 buffer and a
number rounded to its value, and the buffer's own reader keeps it), torch's numbers for it are those that round to
it in float32 and are not it: the node's FX call's, the origin's torch program's calls of the same ATen op and its
``aten.scalar_tensor`` calls (the number as the exporter's decomposition holds it), then the shortest decimal of the
float32 value (``0.1`` for 0.10000000149011612: a file with no torch program of the number, TorchScript's
``round``).  A patch replaces the node's input by the number in double (``replace_constant``); where several
constants of the origin are so held, one ``sequence`` of them all comes first (without a constant that is itself
one of torch's numbers: that one may be torch's own, tried alone).  Class ``dtype`` (the precision the number is
held in), kind ``export``.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.constants import read_constants
from drifttui.core.explain.causes.locate.fx_localise import fx_of
from drifttui.core.onnx.graph import fx_record
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.weights import read_tensor

ATEN = {"Mul": "aten.mul", "Div": "aten.div", "Add": "aten.add", "Sub": "aten.sub", "Pow": "aten.pow",
        "Max": "aten.clamp", "Min": "aten.clamp", "Clip": "aten.clamp", "Where": "aten.where",
        "Greater": "aten.gt", "Less": "aten.lt", "GreaterOrEqual": "aten.ge", "LessOrEqual": "aten.le",
        "Equal": "aten.eq"}
NUMBER = re.compile(r"(?<![\w%.])-?(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+)")
DOUBLE = 11
MAX = 8                     # single patches per origin


def as_float32(v: float) -> float:
    """``v`` as float32 holds it, widened back."""
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def _double_scalars(model: Any) -> dict[str, float]:
    """Value name -> number of every one-element float64 initializer or Constant a node reads whose value float32
    holds exactly (the only ones a float32 rounding can have made)."""
    out: dict[str, float] = {}
    for name, t in read_constants(model):
        if t.data_type == DOUBLE and int(np.prod(t.dims)) == 1:
            v = float(np.asarray(read_tensor(t)).ravel()[0])
            if np.isfinite(v) and as_float32(v) == v:
                out[name] = v
    return out


def _fx_numbers(node: Any) -> Optional[list[float]]:
    """The Python numbers the node's FX call (a dynamo file) takes, positional or keyword (``alpha=0.1``); None for
    a node with no FX call."""
    if fx_of(node) is None:
        return None
    text = fx_record(node)
    call = text.split("](", 1)[1] if "](" in text else ""
    return [float(v) for v in NUMBER.findall(call)]


def _reads_number(node: Any) -> bool:
    """The node's FX call (a dynamo file) takes a Python number, inline or as ``%scalar_tensor``: not a parameter
    or buffer (the optimizer shares one initializer between a buffer and a number rounded to its value); a node
    with no FX call may."""
    numbers = _fx_numbers(node)
    text = fx_record(node)
    return numbers is None or bool(numbers) or "%scalar_tensor" in text


def _shortest(got: float) -> Optional[float]:
    """The shortest decimal of the float32 value ``got`` (0.1 for 0.10000000149011612), when it is not ``got``."""
    v = float(str(np.float32(got)))
    return v if v != got else None


def _numbers(node: Any, got: float, calls: Callable[[str], list[list[Optional[float]]]]) -> tuple[list[float], bool]:
    """torch's numbers for ``node``'s constant ``got``: those of its FX call, of the origin's torch program's calls
    of the same ATen op and of ``aten.scalar_tensor``, then the shortest decimal, each rounding to ``got``; and
    whether ``got`` is itself one of torch's numbers (the optimizer may share its initializer with a rounded one)."""
    own = _fx_numbers(node) or []
    program = [a for prefix in (ATEN[node.op_type], "aten.scalar_tensor") for call in calls(prefix) for a in call
               if a is not None]
    short = _shortest(got)
    found = [v for v in dict.fromkeys(own + program) if as_float32(v) == got and v != got]
    return found + ([short] if short is not None and short not in found else []), got in own + program


TAIL = ("torch keeps a Python scalar of a float64 op in double; the dynamo exporter lowers it as a float32 constant "
        "Cast to double, TorchScript's round(decimals=) writes 10**d in float32")


def _read(node: Any, name: str, got: float, want: float) -> str:
    return f"{node.op_type} {node.name} reads the Python number {want!r} as the float64 constant {got!r} ({name})"


def _fix(want: float) -> str:
    return (f"hold the number in a float64 tensor (a buffer `torch.tensor({want!r}, dtype=torch.float64)`) rather "
            "than a Python float, or export with the other exporter; `drifttui repair` writes the number in double")


def _patch(case: Case, node: Any, pos: int, name: str, got: float, want: float) -> Patch:
    why = (f"{_read(node, name, got, want)}: the number held at float32 precision in a float64 op ({TAIL}); with "
           f"{want!r} in double the file computes what torch computes")
    spec = {"op": "replace_constant", "name": name, "node": node.name, "input": pos, "value": want}
    return Patch(spec, "dtype", why, _fix(want), "export", module=case.module, nodes=[node.name])


def double_scalar_patches(case: Case, calls: Callable[[str], list[list[Optional[float]]]]) -> list[Patch]:
    """A ``sequence`` of every float64 constant of the origin held at float32 precision (when more than one), then
    one patch per (node, torch number); none for a file without such a constant (its program is then never traced)."""
    scalars = _double_scalars(case.model)
    singles: list[Patch] = []
    said: dict[tuple[str, int], str] = {}
    for node in case.model.graph.node:
        for pos, name in enumerate(node.input):
            if node.op_type not in ATEN or name not in scalars or not _reads_number(node):
                continue
            wants, own = _numbers(node, scalars[name], calls)
            for want in wants[:2]:
                singles.append(_patch(case, node, pos, name, scalars[name], want))
                if not own:     # a constant that may be torch's own number is tried alone, never in the sequence
                    said.setdefault((node.name, pos), _read(node, name, scalars[name], want))
    first = {(p.spec["node"], p.spec["input"]): p for p in reversed(singles)}
    if len(said) < 2:
        return singles[:MAX]
    every = [first[k] for k in said]
    why = (f"{'; '.join(said.values())}: {len(every)} numbers held at float32 precision in float64 ops ({TAIL}); "
           "with each in double the file computes what torch computes")
    both = Patch({"op": "sequence", "patches": [p.spec for p in every]}, "dtype", why, every[0].fix, "export",
                 module=case.module, nodes=list(dict.fromkeys(n for p in every for n in p.nodes)))
    return [both] + singles[:MAX]
