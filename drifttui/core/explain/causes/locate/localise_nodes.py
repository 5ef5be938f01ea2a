"""Node-level localisation inside the origin: which ONNX node is wrong, by its *own* error.

The accumulated error of a node mixes what it computes with what it was fed: a Log after a
Sigmoid that returns 0 is "wrong" by -inf, the Sigmoid by 1e-9.  Two witnesses give each node
correct inputs:

* ``own_errors``: every node run alone in ONNX Runtime on the ONNX reference evaluator's values of
  its inputs, compared with the reference evaluator's value of its output (relative error where
  the value is a normal float; an integer output is exact: any other integer is wrong, a power of
  2**60 one off included): the first node over the bar is the deviating kernel (kind ``runtime``);
* ``align``: the origin's values (ONNX Runtime, torch-side inputs) matched by shape and numbers
  with the values of a verified re-export of the origin module fed the same inputs (a graph that
  computes what torch computes): the first node whose output the re-export never computes,
  while all its inputs are matched, is the mistranslated node (kind ``export``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.base.tolerance import bound, rtol_floor

MAX_NODES = 200                 # nodes run alone per origin (one small ORT session each)
REL_BAR = 1e-2                  # own relative error of a wrong kernel (a right one is ~1e-6)


@dataclass
class NodeError:
    node: str
    op_type: str
    abs_err: float
    rel_err: float              # over the elements whose reference value is a normal float
    ulps: float = 0.0           # the largest error in units of the reference value's last place (finite values)
    flushed: int = 0            # elements the reference holds as a nonzero subnormal and the kernel as 0
    grows: bool = False         # the error grows along the (flattened) output: a value accumulated step by step


def _single(node: Any, model: Any, vals: dict[str, np.ndarray]) -> Optional[Any]:
    from onnx import helper

    inits = {t.name: t for t in model.graph.initializer}
    ins, feeds = [], {}
    for v in node.input:
        if not v or v in inits:
            continue
        if v not in vals:
            return None
        arr = np.asarray(vals[v])
        ins.append(helper.make_tensor_value_info(v, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
        feeds[v] = arr
    outs = [helper.make_tensor_value_info(v, helper.np_dtype_to_tensor_dtype(np.asarray(vals[v]).dtype), None)
            for v in node.output if v]
    g = helper.make_graph([node], "drifttui_node", ins, outs, [inits[v] for v in node.input if v in inits])
    m = helper.make_model(g, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    m.functions.extend(model.functions)
    return copy_model(m), feeds


def _rel(want: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    w = want.astype(np.float64)
    g = got.astype(np.float64)
    both_inf = np.isinf(w) & np.isinf(g) & (np.sign(w) == np.sign(g))
    with np.errstate(invalid="ignore"):     # inf - inf: its NaN is told below, not printed
        d = np.where(both_inf | (np.isnan(w) & np.isnan(g)), 0.0, np.abs(w - g))
    d = np.where(np.isnan(d), np.inf, d)
    if want.dtype.kind in "iub":        # an integer op is exact: any other integer is wrong, however large
        return (float(d.max()) if d.size else 0.0), (1.0 if d.size and d.max() > 0 else 0.0)
    tiny = float(np.finfo(want.dtype).tiny) if want.dtype.kind == "f" else 1.0
    normal = np.abs(w) >= tiny
    rel = float((d[normal] / np.abs(w[normal])).max()) if normal.any() else 0.0
    return (float(d.max()) if d.size else 0.0), rel


GROWS = 4.0                     # the last quarter's mean error this many times the first quarter's


def _ulps(want: np.ndarray, got: np.ndarray) -> tuple[float, int, bool]:
    """The largest error in units of the reference value's last place (its float type's spacing there, the smallest
    subnormal at least), over the elements both sides hold finite; how many nonzero subnormal reference values the
    kernel returns as 0 (a flush to zero); and whether the error grows along the flattened output (``GROWS``)."""
    if want.dtype.kind != "f" or got.dtype != want.dtype:
        return 0.0, 0, False
    finite = np.isfinite(want) & np.isfinite(got)
    if not finite.any():
        return 0.0, 0, False
    w, g = want[finite], got[finite]
    err = np.abs(w.astype(np.float64) - g.astype(np.float64))
    step = np.maximum(np.spacing(np.abs(w)), np.finfo(want.dtype).smallest_subnormal).astype(np.float64)
    flushed = int(((w != 0) & (np.abs(w) < np.finfo(want.dtype).tiny) & (g == 0)).sum())
    q = err.size // 4
    grows = q >= 4 and float(err[-q:].mean()) > GROWS * float(err[:q].mean())
    return float((err / step).max()), flushed, grows


def own_errors(model: Any, ref_vals: dict[str, np.ndarray], run_ort: Any) -> list[NodeError]:
    """Each node's own error: run alone in ONNX Runtime (``run_ort(model, feeds)``) on the reference
    evaluator's inputs."""
    out: list[NodeError] = []
    for node in list(model.graph.node)[:MAX_NODES]:
        if node.op_type == "Constant" or not all(v in ref_vals for v in node.output if v):
            continue
        built = _single(node, model, ref_vals)
        if built is None:
            continue
        m, feeds = built
        try:
            got = run_ort(m, feeds)
        except Exception:  # noqa: BLE001 - a node that does not run alone (a function, a shape op)
            continue
        worst = (0.0, 0.0, 0.0, 0, False)
        for v in node.output:
            if v and v in got and np.shape(got[v]) == np.shape(ref_vals[v]) and got[v].dtype.kind in "fiub":
                e = _rel(np.asarray(ref_vals[v]), got[v]) + _ulps(np.asarray(ref_vals[v]), np.asarray(got[v]))
                worst = (max(worst[0], e[0]), max(worst[1], e[1]), max(worst[2], e[2]), worst[3] + e[3],
                         worst[4] or e[4])
        out.append(NodeError(node.name, node.op_type, *worst))
    return out


def deviating(errors: list[NodeError], atol: float) -> Optional[NodeError]:
    """The first node whose own error is a wrong kernel's: relative error over the bar."""
    return next((e for e in errors if e.rel_err > REL_BAR and e.abs_err > 0), None)


def _matches(a: np.ndarray, pool: list[np.ndarray], atol: float, rtol: float) -> bool:
    for b in pool:
        if b.shape != a.shape:
            continue
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            scale = float(np.abs(b.astype(np.float64)).max()) if b.size else 0.0
            if np.allclose(a.astype(np.float64), b.astype(np.float64), atol=bound(atol, rtol, scale, rtol_floor(a, b)),
                           rtol=0, equal_nan=True):
                return True
        elif np.array_equal(a, b):
            return True
    return False


NUMERIC = "biuf"


class Pool:
    """Values to match against (``_matches``), grouped by shape, with a few elements of each sampled:
    a value is compared whole only with the candidates whose sampled elements are within its
    tolerance (a necessary condition), so a 2000-node origin aligns against its re-export in well
    under a second, not in minutes (N x M whole-array comparisons).  Same answers as ``_matches``."""

    SAMPLED = 16

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.by_shape: dict[tuple[int, ...], list[np.ndarray]] = {}
        for b in arrays:
            self.by_shape.setdefault(b.shape, []).append(b)
        self._sampled: dict[tuple[int, ...], Optional[tuple[np.ndarray, ...]]] = {}

    def _group(self, shape: tuple[int, ...]) -> Optional[tuple[np.ndarray, ...]]:
        """(sampled positions, their values per candidate, each candidate's scale and rtol floor);
        None for a group holding a value that is not a number (compared whole, one by one)."""
        if shape not in self._sampled:
            bs = self.by_shape[shape]
            if any(b.dtype.kind not in NUMERIC for b in bs):
                self._sampled[shape] = None
                return None
            idx = np.unique(np.linspace(0, bs[0].size - 1, min(bs[0].size, self.SAMPLED)).astype(np.int64))
            picked = np.stack([b.ravel()[idx].astype(np.float64) for b in bs])
            scale = np.array([float(np.abs(b.astype(np.float64)).max()) for b in bs])
            floors = np.array([rtol_floor(b) for b in bs])
            self._sampled[shape] = (idx, picked, scale, floors)
        return self._sampled[shape]

    def matches(self, a: np.ndarray, atol: float, rtol: float) -> bool:
        bs = self.by_shape.get(a.shape)
        if not bs:
            return False
        group = self._group(a.shape) if a.size and a.dtype.kind in NUMERIC else None
        if group is None:
            return _matches(a, bs, atol, rtol)
        idx, picked, scale, floors = group
        x = a.ravel()[idx].astype(np.float64)[None, :]
        tol = atol + np.maximum(max(rtol, rtol_floor(a)), floors) * scale
        with np.errstate(invalid="ignore"):     # numpy's isclose, element by element (equal_nan)
            near = ((np.abs(x - picked) <= tol[:, None]) & np.isfinite(picked)) | (x == picked)
        near |= np.isnan(x) & np.isnan(picked)
        maybe = near.all(axis=1) | ~np.isfinite(tol)       # a tolerance that is no number: compared whole
        return any(_matches(a, [bs[k]], atol, rtol) for k in np.flatnonzero(maybe))


def align(model: Any, vals: dict[str, np.ndarray], feeds: dict[str, np.ndarray],
          witness: dict[str, np.ndarray], final: list[str], atol: float, rtol: float) -> Optional[Any]:
    """The node of ``model`` whose output no value of the witness graph matches while every input
    it reads is a feed, a static value or a matched value, when there is exactly one such node; an
    output of the origin is matched only with an output of the witness (``final``).  A step (``STEPS``) is
    blamed only when nothing before it parts from the witness without the absolute tolerance (``_before_step``)."""
    frontier = _frontier(model, vals, feeds, witness, final, atol, rtol)
    # one node where the values part: that node is wrong; several: the file decomposes the module
    # differently from the re-export, and no single node is to blame
    if len(frontier) != 1:
        return None
    if frontier[0].op_type in STEPS and atol > 0:
        return _before_step(model, vals, feeds, witness, final, rtol, frontier[0])
    return frontier[0]


def _frontier(model: Any, vals: dict[str, np.ndarray], feeds: dict[str, np.ndarray],
              witness: dict[str, np.ndarray], final: list[str], atol: float, rtol: float) -> list[Any]:
    """The nodes, in the graph's order, whose outputs no witness value matches while their inputs are matched."""
    every = Pool([np.asarray(v) for v in witness.values()])
    last = Pool([np.asarray(witness[v]) for v in final if v in witness])
    mine = {o.name for o in model.graph.output}
    static = {t.name for t in model.graph.initializer}
    good = set(feeds) | static
    frontier: list[Any] = []
    for n in model.graph.node:
        if n.op_type == "Constant":
            good.update(n.output)
            continue
        outs = [v for v in n.output if v and v in vals]
        if not outs:
            continue
        if all((last if v in mine else every).matches(np.asarray(vals[v]), atol, rtol) for v in outs):
            good.update(outs)
            continue
        if all(not v or v in good for v in n.input):
            frontier.append(n)
        # fed a value the witness never computes either: downstream of the frontier
    return frontier


# ops whose output jumps where the input crosses a point (a sign, a bound, an integer): an input within the
# absolute tolerance of the witness's (0 for torch's 8e-6) is matched, and the step is blamed for its difference
STEPS = {"Sign", "Floor", "Ceil", "Round", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Equal"}


def _before_step(model: Any, vals: dict[str, np.ndarray], feeds: dict[str, np.ndarray], witness: dict[str, np.ndarray],
                 final: list[str], rtol: float, step: Any) -> Any:
    """The node before ``step`` the values part at when matched without the absolute tolerance (a value torch
    computes as 8e-6 that the file holds as 0 is within it, and ``Sign`` makes 1 of one, 0 of the other): the node
    that computes the step's input otherwise, the first in the step's inputs' cone; else ``step``."""
    made = {v: n for n in model.graph.node for v in n.output}
    cone, todo = set(), list(step.input)
    while todo:
        n = made.get(todo.pop())
        if n is not None and n.name not in cone:
            cone.add(n.name)
            todo.extend(n.input)
    tight = _frontier(model, vals, feeds, witness, final, 0.0, rtol)
    return next((n for n in tight if n.name in cone), step)
