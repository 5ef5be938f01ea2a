"""Values the dynamo exporter's optimizer folded into constants, held with another element count than torch's.

The ONNX optimizer folds every FX computation made of Python numbers and constants alone (``torch.arange(0, 3,
0.01)``, then its ``.long()``) into one initializer: no ONNX node of the file computes it, so ``fx_localise``, which
runs each FX node's ONNX nodes alone fed torch's values, never meets it, and takes the first node that reads it for
the wrong one (an ``ArgMin``, a ``Slice`` whose input is one element longer).  A folded value is known by the FX record
of its reader: an argument ``%a`` that no ONNX node of the file computes.  The file's constant for it is the one
named ``a`` (the exporter names a folded value after its FX node), else the one non-scalar constant the reader's
nodes read; torch's value is that FX node's in the origin's program.  When the two hold another number of elements
(no rounding explains that), the folded value is wrong on its own: it has no input that could be wrong before it.
Its FX node is told with the FX nodes it was folded from, and named by the first of them made from Python numbers
alone (a factory: the element count is made there).  A value made from Python numbers alone whose constant holds
torch's element count but other numbers past float32 rounding (``torch.hamming_window(n)``: torchlib's ONNX
``HammingWindow`` has the coefficients 25/46 and 21/46, not torch's 0.54 / 0.46) is wrong on its own the same way,
and so is one made from parameters and buffers with no input (DINOv2's position embedding resampled by an
antialiased ``interpolate`` the exporter folded through ONNX's reference ``Resize`` with sizes, not torch's scale):
both are the same for every input;
its constant is the one of its name, else the one float constant of its shape the readers read (an ``STFT``'s window).
"""
from __future__ import annotations

import re
from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import SCALAR_FLOAT_ELEMS
from drifttui.core.onnx.graph import fx_record
from drifttui.core.onnx.weights import read_tensor
from drifttui.core.runtime.torch_hooks import to_numpy

_ARGS = re.compile(r"\]\((.*)\)\s*$", re.S)
FOLD_RTOL = 1e-4    # past float32 rounding of a value folded by ONNX's reference implementation rather than torch


def folded_args(model: Any, node: Any) -> list[str]:
    """The FX values ``node``'s FX record takes (``%a``) that no ONNX node of ``model`` computes and no graph input
    holds: folded at export."""
    m = _ARGS.search(fx_record(node) or "")
    if m is None:
        return []
    made = {v for n in model.graph.node for v in n.output} | {i.name for i in model.graph.input}
    return [a for a in dict.fromkeys(re.findall(r"%(\w+)", m.group(1))) if a not in made]


def _constants(model: Any) -> dict[str, Any]:
    out = {t.name: t for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].HasField("t"):
            out[n.output[0]] = n.attribute[0].t
    return out


def _file_constant(model: Any, readers: list[Any], name: str, consts: dict[str, Any]) -> Optional[str]:
    """The constant that holds the folded FX value ``name``: the one of that name, else the one non-scalar
    constant the readers read."""
    if name in consts:
        return name
    read = [v for n in readers for v in n.input if v in consts and int(np.prod(consts[v].dims)) > 1]
    return read[0] if len(set(read)) == 1 else None


def _chain(program: list[tuple], name: str) -> list[tuple]:
    """The program's FX nodes the value ``name`` was computed from, itself included, in program order."""
    at = {p[0]: i for i, p in enumerate(program)}
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen or n not in at:
            continue
        seen.add(n)
        todo += [a.name for a in _nodes_in(program[at[n]][5])]
    return [p for p in program if p[0] in seen]


def _nodes_in(args: Any) -> list[Any]:
    if isinstance(args, (list, tuple)):
        return [x for a in args for x in _nodes_in(a)]
    return [args] if hasattr(args, "op") and hasattr(args, "name") else []


def folded_groups(model: Any, groups: list[Any], program: list[tuple], make: Any) -> list[tuple[Any, Any]]:
    """(the group that reads it, FxNode) of each folded FX value whose file constant holds another element count
    than torch's value, or other numbers (made from Python numbers alone): ``make(name, target, nodes, op_types)``
    builds the FxNode."""
    consts, out, done = _constants(model), [], set()
    by_name = {p[0]: p for p in program}
    nodes = {n.name: n for n in model.graph.node}
    for g in groups:
        readers = [nodes[n] for n in g.nodes if n in nodes]
        for a in [a for a in dict.fromkeys(x for r in readers for x in folded_args(model, r)) if a not in done]:
            p = by_name.get(a)
            if p is None or not hasattr(p[2], "shape"):
                continue
            want = to_numpy(p[2])
            same = _same_count_constant(readers, a, want, consts)
            const = _file_constant(model, readers, a, consts) or same
            if const is None:
                continue
            held, chain = read_tensor(consts[const]), _chain(program, a)
            said = _another_count(held, want) if held.size != want.size else \
                _other_numbers(same == const, held, want, chain)
            if said is None:
                continue
            done.add(a)
            params = any(getattr(x, "op", "") not in ("call_function", "placeholder")
                         for c in chain for x in _nodes_in(c[5]))
            head = _head(chain, p, params)
            at = [r for r in readers if const in r.input]
            w = make(a, head[1], [r.name for r in at], [r.op_type for r in at])
            w.call, w.aten, w.own_abs, w.fails = head[3], head[4], float("inf"), True
            w.from_parameters = params
            w.held = _in_layout(const, want, held)
            w.folded = (f"the constant {const}, folded at export from "
                        f"{' -> '.join(c[1] for c in chain)} (FX node {a}), {said}")
            out.append((g, w))
    return out


def _another_count(held: np.ndarray, want: np.ndarray) -> Optional[str]:
    """The words for a constant of another element count than torch's value, or None when it is not that value (a
    shape read beside a folded weight, a mask the reader reads too) or the same numbers in a broadcast layout."""
    if (held.dtype.kind == "f") != (want.dtype.kind == "f") or not _one_axis_apart(held, want) \
            or _broadcast_equal(held, want):
        return None
    return f"holds {held.size} elements where torch's value has {want.size}"


def _same_count_constant(readers: list[Any], name: str, want: np.ndarray, consts: dict[str, Any]) -> Optional[str]:
    """The constant that holds the folded FX value ``name`` at torch's element count: the one of that name, else the
    one float constant of its shape (size-1 axes aside) the readers read."""
    if name in consts:
        return name
    shape = [d for d in np.shape(want) if d != 1]
    read = {v for n in readers for v in n.input if v in consts and consts[v].data_type in SCALAR_FLOAT_ELEMS
            and [d for d in consts[v].dims if d != 1] == shape}
    return next(iter(read)) if len(read) == 1 else None


def _other_numbers(named: bool, held: np.ndarray, want: np.ndarray, chain: list[tuple]) -> Optional[str]:
    """The words for a constant of torch's element count that holds other numbers than torch's value past float32
    rounding, when it is that value's constant (``named``) and the value is made from Python numbers alone (no
    input, parameter or buffer: torch's value is right for every input); else None."""
    if not named or held.dtype.kind != "f" or want.dtype.kind != "f" or held.size < 2 \
            or any(getattr(x, "op", "") == "placeholder" for c in chain for x in _nodes_in(c[5])):
        return None
    torch_value = np.asarray(want, np.float64).reshape(held.shape)
    off = float(np.max(np.abs(held.astype(np.float64) - torch_value)))
    if not np.isfinite(off) or off <= FOLD_RTOL * float(np.max(np.abs(torch_value))) + 1e-7:
        return None
    return f"holds values up to {off:.3g} off torch's (torch's value has the same {held.size} elements)"


def _head(chain: list[tuple], value: tuple, params: bool) -> tuple:
    """The FX node a folded value is named by: the first made from Python numbers alone (a factory), or, for a value
    of parameters or buffers, the first of its chain that computes rather than moves numbers (the
    ``_upsample_bicubic2d_aa`` of a position embedding, the ``linalg_vector_norm`` of a weight, not the slice around
    it or the ``scalar_tensor`` it is divided by); else the value itself."""
    made = None if params else next((c for c in chain if not _nodes_in(c[5])), None)
    if made is not None:
        return made
    return next((c for c in chain if _nodes_in(c[5]) and (c[1].split(".") + [""])[1] not in _LAYOUT), value)


_LAYOUT = {"slice", "view", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "expand", "cat", "clone",
           "_to_copy", "contiguous", "select", "flatten", "alias", "unflatten"}


def _in_layout(const: str, want: np.ndarray, held: np.ndarray) -> Optional[tuple[str, np.ndarray]]:
    """(the constant, torch's value in its layout: its longest axis resized to torch's element count, in its type),
    or None when torch's count does not fit that axis (a (41, 1) index of torch's 40 elements is (40, 1))."""
    shape = list(held.shape) or [1]
    axis = int(np.argmax(shape))
    rest = int(np.prod(shape)) // max(shape[axis], 1)
    if rest == 0 or want.size % rest:
        return None
    shape[axis] = want.size // rest
    return const, np.asarray(want).reshape(shape).astype(held.dtype)


def _broadcast_equal(held: np.ndarray, want: np.ndarray) -> bool:
    """Whether one of the two broadcasts to the other's shape (trailing axes aligned, or with the size-1 axes
    dropped) with the same values: a folded value the file keeps in a smaller layout its reader broadcasts."""
    for small, big in ((held, want), (want, held)):
        for shape in (small.shape, tuple(d for d in small.shape if d != 1)):
            try:
                wide = np.broadcast_to(np.asarray(small).reshape(shape), big.shape)
            except ValueError:
                continue
            with np.errstate(invalid="ignore"):
                if np.allclose(wide.astype(np.float64), np.asarray(big, np.float64), rtol=1e-5, atol=1e-6,
                               equal_nan=True):
                    return True
    return False


def _one_axis_apart(held: np.ndarray, want: np.ndarray) -> bool:
    """Whether the two shapes, their size-1 axes dropped, differ in the length of one axis only: the same value
    with another element count (a range one element longer), not another value the reader reads (a mask)."""
    a, b = [d for d in held.shape if d != 1], [d for d in want.shape if d != 1]
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1
