"""Node-level localisation of a dynamo file against torch, through the exporter's node <-> FX node
correspondence.

The dynamo exporter writes, on every ONNX node, the FX node it translated
(``pkg.torch.onnx.fx_node``: ``%floor_divide : [...] = call_function[target=torch.ops.aten....]``),
and names the ONNX value that carries an FX node's result after that node.  The origin module is
exported with ``torch.export`` on its captured inputs and decomposed as the exporter decomposes it
(``_prepare_exported_program_for_export``), its FX graph is run on those inputs, and its FX nodes
are matched with the file's in order and by target (then by shape): every ONNX value named after an
FX node gets the torch value of that node.

Each FX node's ONNX nodes (its *group*: ``Exp, Exp, Add, Log`` for one ``aten.logaddexp``) are then
run alone in ONNX Runtime, fed the torch values of their inputs, and compared with the FX node's
torch value: the first group over the tolerance by its *own* error is the wrong node (when none is,
downstream nodes amplify a small error: the group with the largest own relative error over
``REL_LOW``).  ``accumulated`` is the first value whose ONNX Runtime value, on the case's torch-side
feeds, fails against torch: it shows a drift the case's own outputs miss (a child module fed
torch's value of a wrong input).

A value the exporter's optimizer folded into a constant has no ONNX node to run: ``folded_values`` compares it with
torch's value and puts it, when it holds another element count, before the node that reads it.

A file without that metadata (TorchScript, or a file the optimizer stripped) gets None: the
re-export alignment of ``localise_nodes.align`` stays its witness.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import Case, at_export_shapes, call_io
from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.locate.folded_values import folded_groups
from drifttui.core.explain.causes.locate.fx_outputs import escaping_values
from drifttui.core.explain.causes.locate.overflow import overflow_node
from drifttui.core.explain.causes.locate.torch_call import aten_called, aten_name, call_from_meta
from drifttui.core.explain.causes.locate.torch_program import addends, program as torch_program, target_name
from drifttui.core.base.metrics import compare, largest
from drifttui.core.onnx.graph import fx_record
from drifttui.core.runtime.torch_hooks import to_numpy

MAX_GROUPS = 200                # FX nodes run alone per origin (one small ORT session each)
REL_LOW = 1e-3                  # own relative error that downstream nodes amplify (a right one is ~1e-6)
# ops whose output holds exactly their data input's elements, rearranged: fed torch's input, torch's own value
# of their output is a rearrangement of it, or the FX value paired with them is another call's
PERMUTE = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity"}
_FX = re.compile(r"^%(\S+) : .*?= (\w+)\[target=(.+?)\]\(")


@dataclass
class FxNode:
    """One FX node of the file and the ONNX nodes that compute it."""
    name: str                   # the FX node's name in the file (the ONNX value named after it)
    target: str                 # aten.logaddexp.default
    nodes: list[str]
    op_types: list[str]
    own_abs: float = 0.0        # fed torch's values of its inputs
    own_rel: float = 0.0
    fails: bool = False
    nonfinite: bool = False     # inf/NaN where torch's value differs
    drops_nonfinite: bool = False   # finite where torch's value is inf/NaN (the lowering drops torch's NaN)
    makes_nonfinite: bool = False   # inf/NaN where torch's value is finite
    overflow: str = ""          # "Pow node_Pow_5": the same function, but this node overflows (overflow.py)
    dtype_change: str = ""      # "uint8 -> int8": the file's output type holds not every value of torch's
    call: str = ""              # the torch call it came from, as written (torch_call: its torch_fn meta)
    aten: str = ""              # the ATen op before the exporter's decompositions (its original_aten), or target
    outputs: list[str] = field(default_factory=list)    # its last ONNX node's outputs (a multi-output op's items)
    folded: str = ""            # held as a constant folded at export, with another element count (folded_values)
    held: Optional[tuple] = None    # a folded value's (constant, torch's value in the constant's layout)
    from_parameters: bool = False   # a folded value computed from parameters or buffers (folded_values)


@dataclass
class FxLocalisation:
    groups: list[FxNode]
    torch_values: dict[str, np.ndarray]     # ONNX value -> torch's value of its FX node
    wrong: Optional[FxNode] = None
    amplified: bool = False                 # no node over the tolerance on its own: the largest own error
    accumulated: Optional[str] = None       # first value whose accumulated ORT value fails against torch
    accumulated_abs: float = 0.0
    matched: int = 0
    every: dict[str, FxNode] = field(default_factory=dict)    # every FX node of the file by name, matched or not
    addends: list[float] = field(default_factory=list)  # the numbers torch's graph adds (aten.add/sub of a number)

    def evidence(self) -> dict[str, Any]:
        w = self.wrong
        return {"fx_matched": self.matched,
                "fx_wrong_node": None if w is None else {"fx_node": w.name, "target": w.target, "nodes": w.nodes,
                                                         "op_types": w.op_types, "own_abs": w.own_abs,
                                                         "own_rel": w.own_rel, "amplified": self.amplified},
                "fx_own_errors": [{"fx_node": g.name, "target": g.target, "own_abs": g.own_abs, "own_rel": g.own_rel}
                                  for g in self.groups][:40]}


def fx_of(node: Any) -> Optional[tuple[str, str]]:
    """(FX node name, target) the exporter recorded on an ONNX node, or None."""
    text = fx_record(node)
    m = _FX.match(text or "")
    return None if m is None else (m.group(1), target_name(m.group(3)))


def fx_scalars(node: Any) -> list[Optional[float]]:
    """The FX node's positional arguments as the exporter recorded them: a number, or None for a
    value (``%mul``) or anything else."""
    text = fx_record(node)
    m = re.search(r"\(args = \((.*?)\), kwargs", text)
    out: list[Optional[float]] = []
    for a in (m.group(1).split(",") if m else []):
        try:
            out.append(float(a.strip()))
        except ValueError:
            out.append(None)
    return out


def fx_reads(node: Any, name: str) -> bool:
    """The FX node the exporter recorded on ``node`` takes the FX value ``name`` as an argument (``%name``)."""
    text = fx_record(node)
    m = re.search(r"\]\((.*)\)\s*$", text)
    return re.search(rf"%{re.escape(name)}\b", m.group(1) if m else text) is not None


def has_fx(model: Any) -> bool:
    return any(fx_of(n) is not None for n in model.graph.node)


def _program_values(gm: Any, ins: list[Any]) -> list[tuple]:
    """(name, target, value, the torch call it came from, its ATen op before decomposition, its args) of each
    call_function node of the FX graph ``gm`` run on ``ins``."""
    import torch

    out: list[tuple] = []

    class Record(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            val = super().run_node(n)
            if n.op == "call_function":
                m = _FX.match(n.format_node() or "")
                target = target_name(m.group(3)) if m else str(n.target)
                orig = n.meta.get("original_aten")
                fn = n.meta.get("torch_fn")
                out.append((n.name, target, val, call_from_meta(fn) or "",
                            aten_called(fn) or (aten_name(orig) if orig is not None else target), tuple(n.args)))
            return val

    with torch.no_grad():
        Record(gm).run(*ins)
    return out


def fx_torch_values(ctx: Any, case: Case, shapes: dict[str, tuple],
                    values: Optional[dict[str, np.ndarray]] = None) -> Optional[tuple[list[FxNode], dict, list]]:
    module = ctx.modules().get(case.module) if case.module else ctx.model
    io = call_io(ctx, case)
    if module is None or io is None:
        return None
    try:
        module = as_called(ctx, case.call, module, ctx.sample(case.sample))    # called with kwargs: as it was
        program = _program_values(torch_program(ctx, case.module, module, io[0]), io[0])
    except Exception:  # noqa: BLE001 - a module torch.export cannot trace: no FX witness
        return None
    groups = _groups(case.model)
    return (groups, {k: to_numpy(v) for k, v in _match(groups, program, shapes, values or {}).items()},
            addends(program), program)


def _match(groups: list[FxNode], program: list[tuple], shapes: dict[str, tuple],
           values: dict[str, np.ndarray]) -> dict[str, Any]:
    """The file's FX node name -> torch value, matched in order by target, kept when the shapes agree; each
    matched group learns the torch call (and ATen op) its FX node came from.  Where the program holds more
    calls of a target than the file (an optimizer dropped one: ``x * 1.000002`` taken for ``x * 1``), the
    file's node is matched with the one of the calls it may stand for whose torch value is closest to the
    file's (``values``): in order alone, every later call of that target would be paired one call early."""
    got: dict[str, Any] = {}
    spare = Counter(p[1] for p in program) - Counter(g.target for g in groups)
    j = 0
    for g in groups:
        ks = [i for i in range(j, len(program)) if program[i][1] == g.target][:spare[g.target] + 1]
        if not ks:
            continue
        k = _closest(ks, program, values.get(g.name))
        spare[g.target] -= ks.index(k)
        j = k + 1
        val, g.call, g.aten = program[k][2], program[k][3], program[k][4]
        if hasattr(val, "shape") and (g.name not in shapes or tuple(val.shape) == shapes[g.name]):
            got[g.name] = val
        elif isinstance(val, (tuple, list)) and len(val) == len(g.outputs):     # TopK -> getitem, getitem_1
            got.update({v: t for v, t in zip(g.outputs, val) if v and hasattr(t, "shape")
                        and (v not in shapes or tuple(t.shape) == shapes[v])})
    return got


def _closest(ks: list[int], program: list[tuple], file_val: Optional[np.ndarray]) -> int:
    """Of the program's candidate calls ``ks``, the first unless the file's value tells another: the one
    whose torch value of the file's shape is nearest it (mean absolute difference)."""
    if len(ks) == 1 or file_val is None or np.asarray(file_val).dtype.kind != "f":
        return ks[0]
    def far(k: int) -> float:
        v = to_numpy(program[k][2]) if hasattr(program[k][2], "shape") else None
        if v is None or np.shape(v) != np.shape(file_val) or np.asarray(v).dtype.kind not in "fiu":
            return np.inf
        d = np.abs(np.asarray(v, np.float64) - np.asarray(file_val, np.float64))
        return float(np.nanmean(d)) if np.isfinite(d).any() else np.inf
    return min(ks, key=lambda k: (far(k), ks.index(k)))


def _groups(model: Any) -> list[FxNode]:
    by: dict[str, FxNode] = {}
    for n in model.graph.node:
        fx = fx_of(n)
        if fx is None or n.op_type == "Constant":
            continue
        g = by.setdefault(fx[0], FxNode(fx[0], fx[1], [], []))
        g.nodes.append(n.name)
        g.op_types.append(n.op_type)
        g.outputs = list(n.output)
    return list(by.values())


def as_like(arr: np.ndarray, like: Optional[np.ndarray]) -> np.ndarray:
    if like is None or arr.dtype == like.dtype:
        return arr
    with np.errstate(over="ignore", invalid="ignore"):     # torch's float32 past float16's range is inf, said
        return arr.astype(like.dtype)                     # by the comparison, not by a numpy warning


def _group_model(model: Any, names: set[str], feeds: dict[str, np.ndarray], outs: list[str]) -> Any:
    import onnx
    from onnx import helper

    nodes = [n for n in model.graph.node if n.name in names or n.op_type == "Constant"]
    inits = {t.name: t for t in model.graph.initializer}
    read = {v for n in nodes for v in n.input if v}
    g = helper.make_graph(nodes, "drifttui_fx_node",
                          [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
                           for k, a in feeds.items()],
                          [onnx.ValueInfoProto(name=v) for v in outs], [inits[v] for v in read if v in inits])
    m = helper.make_model(g, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    m.functions.extend(model.functions)
    return m


def floored_rel(want: np.ndarray, got: np.ndarray) -> float:
    """max |want - got| / (|want| + 1% of max |want|): a relative error that near-zero elements
    (a Gemm's cancellations) cannot blow up; inf where a non-finite value differs.  An element at its dtype's
    largest magnitude (a ``finfo.min`` mask fill) agrees with one the other side holds saturated on the same side
    and is left out of the max: a fill of -3.4e38 would floor every other element's error at 3.4e36."""
    w, g = want.astype(np.float64), got.astype(np.float64)
    sat_w, sat_g = np.abs(w) >= largest(want), np.abs(g) >= largest(got)
    same = (w == g) | (np.isnan(w) & np.isnan(g)) | (sat_w & sat_g & (np.sign(w) == np.sign(g)))
    if not (np.isfinite(w[~same]).all() and np.isfinite(g[~same]).all()):
        return float("inf")
    fin = np.isfinite(w)
    if not fin.any():
        return 0.0
    floor = 1e-2 * float(np.abs(w[fin & ~sat_w]).max(initial=0.0)) + float(np.finfo(np.float32).tiny)
    with np.errstate(invalid="ignore"):     # inf - inf where both are inf: ``same`` zeroes it
        d = np.where(same, 0.0, np.abs(w - g))
    return float((d[fin] / (np.abs(w[fin]) + floor)).max())


def _own(case: Case, g: FxNode, tv: dict[str, np.ndarray], ort_vals: dict[str, np.ndarray]) -> bool:
    """Run ``g``'s ONNX nodes alone fed torch's values; False when they cannot be run."""
    names = set(g.nodes)
    mine = [n for n in case.model.graph.node if n.name in names]
    produced = {v for n in mine for v in n.output if v}
    static = {t.name for t in case.model.graph.initializer} | {
        v for n in case.model.graph.node if n.op_type == "Constant" for v in n.output}
    feeds: dict[str, np.ndarray] = {}
    for n in mine:
        for v in n.input:
            if not v or v in produced or v in static or v in feeds:
                continue
            src = tv.get(v, case.feeds.get(v, ort_vals.get(v)))
            if src is None:
                return False
            feeds[v] = as_like(np.asarray(src), ort_vals.get(v, case.feeds.get(v)))
    outs = [v for v in produced if v in tv and v in ort_vals]
    if not outs or not _paired(mine, feeds, tv):
        return False
    try:
        got = run_ort(_group_model(case.model, names, feeds, outs), feeds, outs)
    except Exception:  # noqa: BLE001 - a group that does not run alone (a function, a shape op)
        return False
    for v in outs:
        _retyped(g, np.asarray(tv[v]), ort_vals[v])
        want = as_like(np.asarray(tv[v]), ort_vals[v])
        if np.shape(got[v]) != np.shape(want) or want.dtype.kind not in "fiub":
            continue
        st = compare(want, got[v], case.atol, case.rtol)
        g.own_abs = max(g.own_abs, float(st.max_abs))
        g.own_rel = max(g.own_rel, floored_rel(want, got[v]))
        g.nonfinite = g.nonfinite or g.own_rel == float("inf")
        g.drops_nonfinite = g.drops_nonfinite or _finite_where_not(got[v], want)
        g.makes_nonfinite = g.makes_nonfinite or _finite_where_not(want, got[v])
        g.fails = g.fails or st.fails()
    if g.makes_nonfinite and not g.dtype_change:     # another function, or the function overflowing on the way?
        want = {v: as_like(np.asarray(tv[v]), ort_vals[v]) for v in outs}
        every = [v for n in mine for v in n.output if v]
        g.overflow = overflow_node(_group_model(case.model, names, feeds, every), feeds, want, case.atol, case.rtol)
    return True


def _retyped(g: FxNode, torch_val: np.ndarray, file_val: np.ndarray) -> None:
    """The file types the FX node's value otherwise than torch and torch's values do not survive the
    file's type (uint8 252 is int8 -4): the node fails on its type, whatever its arithmetic; the values
    are compared in the file's type after that, so the type is the only witness."""
    if torch_val.dtype == file_val.dtype or torch_val.dtype.kind not in "fiub" or \
            file_val.dtype.kind not in "fiub" or torch_val.shape != file_val.shape:
        return
    want = torch_val.astype(np.float64)
    with np.errstate(all="ignore"):     # as numbers: uint8 -> int8 -> uint8 round-trips its bits, not 252
        held = torch_val.astype(file_val.dtype).astype(np.float64)
        d = np.abs(held - want)         # inf - inf is NaN: not > 0 below
    if not bool(np.any(d > 0)):          # NaN - NaN is NaN: not > 0
        return
    g.dtype_change = f"{torch_val.dtype} -> {file_val.dtype}"
    g.own_abs = max(g.own_abs, float(np.nanmax(d)) if d.size else 0.0)
    g.fails = True


def _paired(mine: list[Any], feeds: dict[str, np.ndarray], tv: dict[str, np.ndarray]) -> bool:
    """False when a group that only rearranges its data input (PERMUTE) is paired with a torch value
    that holds other elements than torch's value of that input: the FX value matched by target and
    shape is another call's (the origin traced alone took another path), so the group cannot be judged
    by it.  A rearrangement the file gets wrong (a baked reshape target) still holds the same elements
    on torch's side and is judged."""
    if not mine or any(n.op_type not in PERMUTE for n in mine) or not mine[0].input:
        return True
    src, out = feeds.get(mine[0].input[0]), tv.get(mine[-1].output[0])
    if src is None or out is None or np.size(src) != np.size(out):
        return True
    a, b = np.sort(np.asarray(src, np.float64).ravel()), np.sort(np.asarray(out, np.float64).ravel())
    return bool(np.array_equal(a, b, equal_nan=True))


def _finite_where_not(a: Any, b: Any) -> bool:
    """``a`` is finite somewhere ``b`` is inf or NaN (both floats of one shape)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f" or b.dtype.kind != "f" or a.shape != b.shape:
        return False
    return bool((np.isfinite(a) & ~np.isfinite(b)).any())


def fx_localise(ctx: Any, case: Case) -> Optional[FxLocalisation]:
    """The file's wrong node inside the origin by its own error against torch, or None when the file
    carries no FX correspondence or the origin's FX graph cannot be run."""
    if not has_fx(case.model):
        return None
    try:
        ort_vals = run_ort(case.model, case.feeds, [v for n in case.model.graph.node for v in n.output if v])
    except Exception:  # noqa: BLE001 - localise says why ORT cannot run the case
        return None
    got = fx_torch_values(ctx, case, {k: tuple(np.shape(v)) for k, v in ort_vals.items()}, ort_vals)
    if got is None:
        return None
    groups, tv, addends, program = got
    tv = escaping_values(case.model, groups, tv)      # an FX node whose result no value is named after
    loc = FxLocalisation([], tv, matched=len(tv), every={g.name: g for g in groups}, addends=addends)
    for g in groups[:MAX_GROUPS]:
        if _own(case, g, tv, ort_vals):
            loc.groups.append(g)
    # a folded value comes before the node that reads it; at other shapes than the export's, a count baked in at export
    # is another story (runtime_size)
    judged = [g.name for g in loc.groups]
    for g, w in reversed(folded_groups(case.model, groups, program, FxNode) if at_export_shapes(ctx) else []):
        later = [i for i, n in enumerate(judged) if groups.index(loc.every[n]) >= groups.index(g)]
        loc.groups.insert(later[0] if later else len(loc.groups), w)
    loc.wrong = next((g for g in loc.groups if g.fails), None)
    if loc.wrong is None:
        top = max(loc.groups, key=lambda g: g.own_rel, default=None)
        if top is not None and top.own_rel > REL_LOW:
            loc.wrong, loc.amplified = top, True
    for g in groups:
        v = g.name
        if v in tv and v in ort_vals and np.shape(tv[v]) == np.shape(ort_vals[v]) and tv[v].dtype.kind in "fiub":
            st = compare(as_like(tv[v], ort_vals[v]), ort_vals[v], case.atol, case.rtol)
            if st.fails():
                loc.accumulated, loc.accumulated_abs = v, float(st.max_abs)
                break
    return loc
