"""Modules whose output the exporter absorbed into its reader: found by structure, decided by content.

A module returning ``y.t()`` / ``y.permute(...)`` / ``y.reshape(...)`` often has no ONNX value of
its own: TorchScript folds the Transpose into the reading Gemm (``transA``), a reshape disappears
into the reader's shape.  The value its nodes hand on is its output in another layout.  Unpaired,
the module cannot be compared and its reader, fed the wrong values, is named the origin (issue 30
point 6); paired raw with a same-shaped value (a square ``.t()``), a clean module is compared with
its own transpose and fails.  So the module and its reader are compared as one unit, split at that
value seen through the view the exporter absorbed: the view is inserted as a round trip
(``onnx/edit/absorbed_views.py``), the module's output is the view, and the local run feeds torch's
value back to the reader through the way back, as at any other module boundary.  Each module's own
error then names the one whose own computation differs.

Candidates, by structure only:

- an unmapped module (it has nodes, none of whose outputs has its output's shape) whose nodes hand
  on one value of its output's size: the view is the permutation of that value's dims giving the
  output's shape, else a reshape;
- a weight module with no node (its result constant-folded: a transposed weight through a drifting
  op) whose reader's own nodes read a folded constant of its output's size, not one of their
  parameters: the view is the identity, a permutation or a reshape;
- a mapped module with a square 2-D output whose value a Gemm outside it reads transposed
  (``transA`` as input A, ``transB`` as an activation input B): the exporter may have folded the
  module's ``.t()`` there (unless an unmapped call hands that value on: then it is that call's).

Which view, if any, is decided on sample 0 by content: the view of the ONNX value closest to torch's
output (for a square output: only when closer than the value as it lies), close meaning most elements
equal or, for a module drifting in every element, a small relative error (``_distance``).

The reader may be an optimiser's scope-less node (ORT's MatMulAddFusion turns a Linear on a 3-D input
into Reshape, Gemm, Reshape, and its ReshapeFusion merges that last Reshape into the attention's
head split: the Linear's own value is gone, its flattened Gemm output is what it hands on): the way back
then goes in the scope the index filled in for that reader, never the module's own.
"""
from __future__ import annotations

import itertools
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.onnx.edit.absorbed_views import with_views
from drifttui.core.onnx.graph import GraphIndex, build_index, tensor_array
from drifttui.core.prepare.plan import absorbed_inputs
from drifttui.core.prepare.plan.pairing import FLOAT_ELEMS, boundary_outputs
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import FUSED, NOT_EXPORTED, OK, UNMAPPED
from drifttui.core.runtime.torch_hooks import Call


@dataclass(frozen=True)
class View:
    """``value`` seen as call ``call``'s output: Transpose by ``perm``, or (``perm`` None) a Reshape."""

    call: int
    value: str
    perm: Optional[tuple[int, ...]]
    shape: tuple[int, ...]          # torch's output shape (the view's)
    readers: tuple[int, ...]        # nodes outside the call that read ``value`` (they get the way back)
    depth: int = 0                  # the call's depth below the root (the view node's scope); -1 - depth: a
                                    # folded constant's view, scoped by ``module`` (it has no producer)
    module: str = ""                # the call's module (a folded view's scope; the tie between two calls: nested?)
    back_depth: int = -1            # the way back's scope: its first reader's (-1), or, when that reader has no
                                    # scope of its own (optimiser-made), the value's producer's cut to this depth
                                    # (the scope the index filled in for the reader; produced values only)

    def of(self, arr: np.ndarray) -> np.ndarray:
        return np.transpose(arr, self.perm) if self.perm is not None else arr.reshape(self.shape)

    def text(self, index: GraphIndex) -> str:
        how = f"Transpose perm={list(self.perm)}" if self.perm is not None else f"Reshape to {list(self.shape)}"
        readers = ", ".join(index.nodes[r].name or index.nodes[r].op_type for r in self.readers[:2])
        return (f"its output has no ONNX value of its own (the exporter or a graph optimiser absorbed its last view "
                f"into {readers}): "
                f"compared as {self.value} through {how}, split from its reader at that value")


def _static_shape(index: GraphIndex, value: str) -> Optional[tuple[int, ...]]:
    shape = index.shapes.get(value)
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return tuple(shape)


def _outside(index: GraphIndex, value: str, inside: set[int]) -> tuple[int, ...]:
    return tuple(c for c in index.consumers.get(value, []) if c not in inside)


def _back_depth(index: GraphIndex, readers: tuple[int, ...]) -> int:
    """Where the way back goes: in its first reader's own scope (-1), or, when that reader is an optimiser's
    scope-less node (ORT's ReshapeFusion merging a Gemm's output Reshape into the next one), at the depth of
    the scope the index filled in for it.  Named after a scope-less reader, the way back would itself be
    scope-less, and filled from the view before it: inside the module, whose output it would then hide."""
    first = index.nodes[min(readers)] if readers else None
    return len(first.scope or []) if first is not None and first.scope_filled else -1


def _reads_transposed(index: GraphIndex, node: int, value: str) -> bool:
    """A Gemm reading ``value`` transposed: as input A with transA, or as a computed input B with transB."""
    n = index.nodes[node]
    if n.op_type != "Gemm":
        return False
    attrs = {a.name: a.i for a in n.proto.attribute}
    return ((len(n.inputs) > 0 and n.inputs[0] == value and attrs.get("transA", 0) == 1)
            or (len(n.inputs) > 1 and n.inputs[1] == value and attrs.get("transB", 0) == 1
                and not index.is_static(value)))


def _perms(src: tuple[int, ...], dst: tuple[int, ...]) -> list[tuple[int, ...]]:
    if len(src) != len(dst) or len(src) > 5:
        return []
    return [p for p in itertools.permutations(range(len(src)))
            if p != tuple(range(len(src))) and tuple(src[i] for i in p) == dst]


def _handed_on(index: GraphIndex, call: Call, cm: Any, shape: tuple[int, ...]) -> list[View]:
    """An unmapped call: the values its nodes hand on that hold its output's elements."""
    inside = set(cm.nodes)
    views: list[View] = []
    for v in boundary_outputs(index, inside):
        vs = _static_shape(index, v)
        readers = _outside(index, v, inside)
        if vs is None or not (readers or v in index.graph_outputs) or index.elem_types.get(v) not in FLOAT_ELEMS \
                or int(np.prod(vs)) != int(np.prod(shape)):
            continue
        back = _back_depth(index, readers)
        views += [View(cm.call, v, p, shape, readers, call.depth, call.module, back) for p in _perms(vs, shape)] \
            or [View(cm.call, v, None, shape, readers, call.depth, call.module, back)]
    return views


def _read_transposed(index: GraphIndex, call: Call, cm: Any, shape: tuple[int, ...]) -> list[View]:
    """A mapped call with a square 2-D output whose value a Gemm outside it reads transposed."""
    v = cm.outputs.get(0)
    if not v or len(shape) != 2 or shape[0] != shape[1] or v in index.graph_outputs:
        return []
    readers = _outside(index, v, set(cm.nodes))
    if readers and any(_reads_transposed(index, r, v) for r in readers):
        return [View(cm.call, v, (1, 0), shape, readers, call.depth, call.module, _back_depth(index, readers))]
    return []


def _folded(index: GraphIndex, calls: list[Call], plan: Plan, call: Call, shape: tuple[int, ...]) -> list[View]:
    """A call with no node and no input whose result the exporter constant-folded (a weight module):
    the folded constants its readers' own nodes read, of its output's size, that are
    not one of their own parameters."""
    readers = {call.parent} | {c.index for c in calls if any(r.producer and r.producer[0] == call.index
                                                              for r in c.inputs)}
    params = {p[0] for c in calls for p in c.params}
    views: list[View] = []
    seen: set[str] = set()
    for r in sorted(x for x in readers if x is not None):
        for ni in plan.calls[r].own:
            for v in index.nodes[ni].inputs:
                vs = _static_shape(index, v) if v else None
                if not v or v in seen or v in params or not index.is_static(v) or vs is None \
                        or int(np.prod(vs)) != int(np.prod(shape)) or index.elem_types.get(v) not in FLOAT_ELEMS:
                    continue
                seen.add(v)
                users = tuple(c for c in index.consumers.get(v, []) if plan.node_call[c] in readers)
                views += [View(call.index, v, p, shape, users, -1 - call.depth, call.module)
                          for p in [tuple(range(len(vs)))] + _perms(vs, shape) if tuple(vs[i] for i in p) == shape] \
                    or [View(call.index, v, None, shape, users, -1 - call.depth, call.module)]
    return views


def candidates(index: GraphIndex, calls: list[Call], plan: Plan) -> dict[int, list[View]]:
    """Per call, the views that could carry its absorbed output (structure and shapes only)."""
    out: dict[int, list[View]] = {}
    for cm in plan.calls:
        call = calls[cm.call]
        computed = [r for r in call.outputs if not r.passthrough]
        if call.parent is None or len(call.outputs) != 1 or len(computed) != 1:
            continue
        ref = computed[0]
        if not ref.dtype.startswith(("float", "bfloat", "half", "double")) or not ref.shape:
            continue
        shape = tuple(int(d) for d in ref.shape)
        if cm.status == UNMAPPED and cm.nodes:
            views = _handed_on(index, call, cm, shape)
        elif cm.status == OK and cm.nodes:
            views = _read_transposed(index, call, cm, shape)
        elif cm.status in (NOT_EXPORTED, FUSED) and not cm.nodes and cm.folded_into is None \
                and not call.inputs and call.params:
            views = _folded(index, calls, plan, call, shape)
        else:
            views = []
        if views:
            out[cm.call] = views
    # a value an unmapped call hands on in another layout is that call's (structure); a square mapped
    # call's value read transposed is a guess content decides: the structure wins
    claimed = {v.value for ci, vs in out.items() if plan.calls[ci].status == UNMAPPED for v in vs}
    return {ci: vs for ci, vs in out.items() if plan.calls[ci].status != OK
            or not any(v.value in claimed for v in vs)}


UNRELATED = 0.9      # a value with nearly no element of the module's output in any view is another value


def choose(cands: dict[int, list[View]], torch_out: Callable[[list[int]], dict[int, np.ndarray]],
           resolve: Callable[[list[str]], dict[str, np.ndarray]]) -> list[View]:
    """The view per call whose content on sample 0 is closest to torch's output; for a mapped call,
    only when closer than its value as it lies (else the exporter absorbed nothing)."""
    if not cands:
        return []
    try:
        torch_vals = torch_out(sorted(cands))
        onnx_vals = resolve(sorted({v.value for vs in cands.values() for v in vs}))
    except Exception:  # noqa: BLE001 - no content: nothing is re-paired (the plan stays as mapped)
        return []
    chosen: dict[str, tuple[float, View]] = {}     # one view per value: two calls may claim one (Swin)
    for ci, views in sorted(cands.items()):
        t = torch_vals.get(ci)
        if t is None:
            continue
        t = np.asarray(t, dtype=np.float64)
        scored = []
        for view in views:
            o = onnx_vals.get(view.value)
            if o is None or o.size != t.size:
                continue
            if o.shape == t.shape and view.depth >= 0:   # a mapped call's value as it lies first: a tie keeps the plan
                scored.append((_distance(np.asarray(o, dtype=np.float64), t), None))
            d = _distance(view.of(np.asarray(o, dtype=np.float64)), t)
            if d < UNRELATED:
                scored.append((d, view))
        best = min(scored, key=lambda s: s[0], default=None)
        if best is not None and best[1] is not None:
            held = chosen.get(best[1].value)
            if held is None or best[0] < held[0] or (best[0] == held[0] and _nested_deeper(best[1], held[1])):
                chosen[best[1].value] = (best[0], best[1])
    return [v for _, v in chosen.values()]


def _nested_deeper(a: View, b: View) -> bool:
    """Whether ``a``'s call lies inside ``b``'s (its module below ``b``'s): of a container and its last child, which
    hand on one value (LeViT's ``q``, a Sequential ending in the LinearNorm ``q.ln``), the view goes in the child's
    scope, where the container's nodes hold it too, so that both are paired with it; the container's would leave
    the child unmapped.  Two unrelated calls that tie (the same folded constant read by tied weight modules in two
    branches) are not a container and its child: depth says nothing of which one the value is, and the first
    claimant keeps it, as a module called twice does."""
    if not _inside(a.module, b.module):
        return False
    return (a.depth if a.depth >= 0 else -1 - a.depth) > (b.depth if b.depth >= 0 else -1 - b.depth)


def _inside(child: str, parent: str) -> bool:
    return child != parent and (parent == "" or child.startswith(parent + "."))


def _outputs_back_outside(index: GraphIndex, cands: dict[int, list[View]], views: list[View]) -> list[View]:
    """A viewed model output's way back computes the output itself (absorbed_views.py): it goes in the scope of
    the callers of the outermost call that hands the value on (a container and its last child both do), so
    that those callers, whose output it is, still produce it."""
    out = []
    for v in views:
        if _a_model_output(index, v.value) and v.depth >= 0:
            outer = min((w.depth for ws in cands.values() for w in ws if w.value == v.value and w.depth >= 0
                         and (w.module == v.module or _inside(v.module, w.module))), default=v.depth)
            v = dataclasses.replace(v, back_depth=max(outer - 1, 0))
        out.append(v)
    return out


def _a_model_output(index: GraphIndex, value: str) -> bool:
    """A model output, or a value a scope-less node makes only model outputs of (ORT's float16 converter casts
    the outputs back to float32 in Casts it appends without a scope: the index fills in the root's for them, so
    the way back, named after its first reader, went outside the callers, which were then left without a value:
    SqueezeBERT's ``encoder`` unmapped in its float16 copies)."""
    if value in index.graph_outputs:
        return True
    return any(index.nodes[r].scope_filled and index.nodes[r].outputs
               and all(o in index.graph_outputs for o in index.nodes[r].outputs)
               for r in index.consumers.get(value, []))


NEAR = 0.25         # a view within this relative RMS error of torch's output holds it, drifting (a weight x1.05)


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    """How far two arrays are, robust to a drift in a few elements (the share of elements apart) and to a
    small drift in every element (the relative RMS error, when within NEAR): a module whose own weight
    drifts moves all its elements a few percent, and is still the module whose output the value holds."""
    if a.shape != b.shape:
        return float("inf")
    scale = max(float(np.nanmax(np.abs(b))) if b.size else 0.0, 1e-12)
    close = np.isclose(a, b, rtol=1e-3, atol=1e-3 * scale, equal_nan=True)
    share = float(1.0 - close.mean()) if close.size else 0.0
    both = np.isfinite(a) & np.isfinite(b)
    norm = float(np.linalg.norm(b[both])) if both.any() else 0.0
    rel = float(np.linalg.norm(a[both] - b[both])) / norm if norm > 0 else float("inf")
    return min(share, rel) if rel <= NEAR else share



def split_units(index: GraphIndex, calls: list[Call], plan: Plan, map_index: Callable[[GraphIndex], Plan],
                torch_out: Callable[[list[int]], dict[int, np.ndarray]],
                resolve: Callable[[GraphIndex, list[str]], dict[str, np.ndarray]],
                torch_in: Optional[absorbed_inputs.TorchInputs] = None) -> tuple[GraphIndex, Plan]:
    """(index, plan) with a round trip per absorbed output (onnx/edit/absorbed_views.py) and per call input the
    exporter merged into the call's first view (absorbed_inputs.py), and the plan mapped again on it, each
    such module paired with its view; the inputs unchanged when none is found or no view pairs."""
    def values_of(names: list[str]) -> dict[str, np.ndarray]:
        static = {v: tensor_array(index, v) for v in names if index.is_static(v)}
        return {**resolve(index, [v for v in names if v not in static]), **static}

    cands = candidates(index, calls, plan)
    views = _outputs_back_outside(index, cands, choose(cands, torch_out, values_of))
    taken = {v.value for v in views}
    ins = [v for v in absorbed_inputs.choose(absorbed_inputs.candidates(index, calls, plan), torch_in, values_of,
                                             _distance, UNRELATED) if v.value not in taken] if torch_in else []
    if not views and not ins:
        return index, plan
    shapes = {v.value: _static_shape(index, v.value) or v.shape for v in [*views, *ins]}
    new_index = build_index(with_views(index.model, [*views, *ins], shapes), index.path)
    new_plan = map_index(new_index)
    paired = [v for v in views if new_plan.calls[v.call].outputs.get(0) == f"{v.value}::absorbed"]
    fed = [v for v in ins if new_plan.calls[v.call].inputs.get(v.pos) == f"{v.value}::absorbed"]
    if not paired and not fed:
        return index, plan
    for v in paired:
        new_plan.calls[v.call].note = v.text(index)
    for w in fed:
        cm = new_plan.calls[w.call]
        cm.note = f"{cm.note}; {w.text(index)}" if cm.note else w.text(index)
    return new_index, new_plan
