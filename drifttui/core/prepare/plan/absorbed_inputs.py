"""A call's input that the exporter merged into the call's own first view: found by structure, decided by content.

The other side of ``absorbed.py`` (issue 30 point 6).  A container's functional ops often end in a view of the
value they hand to a child: GPT-2's attention reshapes the SDPA result to ``[B, T, C]`` and calls ``c_proj``,
whose own first op flattens it with ``x.view(-1, C)``.  The dynamo exporter's optimiser merges the two
Reshapes into one, in the *child's* scope: torch's input of the child has no ONNX value, so the local run
cannot feed it, the child's own error takes in every uncut node of its parent back to the last module
boundary (the SDPA), and the child, fed the wrong values, is named the origin.

So the child and the ops of its parent that feed it are one unit, split at the value the child's nodes read
from outside, seen through the view the exporter merged: a round trip (``onnx/edit/absorbed_views.py``) gives
that value torch's layout in the *producer's* scope and takes it back in the child's, the child's input is
paired with it, and the local run feeds torch's input to the child there.  The producer's own error is then
measured at the view (as at any call input a parent computed), and each side's own error names the one whose
own computation differs.

Candidates, by structure only: a mapped call whose torch input is computed by functional ops (no module made
it) and is not paired, whose nodes read one value from outside of that input's size in another shape, made by
a node of one of its ancestors (the container that computed the input).  Which view (a permutation of the
dims giving torch's shape, else a reshape), if any, is decided on sample 0 by content, as for outputs
(``absorbed._distance``: most elements equal, or a small relative error in every element).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from drifttui.core.onnx.graph import GraphIndex
from drifttui.core.prepare.plan.pairing import FLOAT_ELEMS
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import OK
from drifttui.core.runtime.torch_hooks import Call

TorchInputs = Callable[[list[tuple[int, int]]], dict[tuple[int, int], np.ndarray]]


@dataclass(frozen=True)
class InputView:
    """``value`` seen as input ``pos`` of call ``call``: Transpose by ``perm``, or (``perm`` None) a Reshape.
    The forward node goes in the producer's own scope, the way back before ``readers``, in theirs."""

    call: int
    pos: int
    value: str
    perm: Optional[tuple[int, ...]]
    shape: tuple[int, ...]          # torch's input shape (the view's)
    readers: tuple[int, ...]        # the call's nodes that read ``value`` (they get the way back)
    depth: int = -1                 # the forward node in its producer's own scope (absorbed_views._scoped)
    module: str = ""
    back_depth: int = -1            # the way back in its first reader's (the call's own) scope

    def of(self, arr: np.ndarray) -> np.ndarray:
        return np.transpose(arr, self.perm) if self.perm is not None else arr.reshape(self.shape)

    def text(self, index: GraphIndex) -> str:
        how = f"Transpose perm={list(self.perm)}" if self.perm is not None else f"Reshape to {list(self.shape)}"
        reader = index.nodes[min(self.readers)]
        return (f"its input {self.pos} has no ONNX value of its own (the exporter merged the view that made it "
                f"into {reader.name or reader.op_type}): fed as {self.value} through {how}, split from the ops "
                "that computed it at that value")


def _ancestors(calls: list[Call], ci: int) -> set[int]:
    out: set[int] = set()
    p = calls[ci].parent
    while p is not None:
        out.add(p)
        p = calls[p].parent
    return out


def _perms(src: tuple[int, ...], dst: tuple[int, ...]) -> list[tuple[int, ...]]:
    if len(src) != len(dst) or len(src) > 5:
        return []
    return [p for p in itertools.permutations(range(len(src)))
            if p != tuple(range(len(src))) and tuple(src[i] for i in p) == dst]


def _read_from_outside(index: GraphIndex, plan: Plan, calls: list[Call], ci: int) -> dict[str, tuple[int, ...]]:
    """The unpaired float values the call's nodes read from a node of one of its ancestors -> those readers."""
    inside, above = set(plan.calls[ci].nodes), _ancestors(calls, ci)
    found: dict[str, list[int]] = {}
    for ni in sorted(inside):
        for v in index.nodes[ni].inputs:
            p = index.producer.get(v) if v else None
            if p is None or p in inside or v in plan.table or index.is_static(v) \
                    or plan.node_call[p] not in above or index.elem_types.get(v) not in FLOAT_ELEMS:
                continue
            found.setdefault(v, []).append(ni)
    return {v: tuple(r) for v, r in found.items()}


def candidates(index: GraphIndex, calls: list[Call], plan: Plan) -> dict[tuple[int, int], list[InputView]]:
    """Per (call, input position), the views of a value its nodes read that could carry that input."""
    out: dict[tuple[int, int], list[InputView]] = {}
    for cm in plan.calls:
        call = calls[cm.call]
        if call.parent is None or cm.status != OK or not cm.nodes or not cm.outputs:
            continue
        wanted = [(pos, ref) for pos, ref in enumerate(call.inputs) if pos not in cm.inputs and ref.producer is None
                  and ref.shape and ref.dtype.startswith(("float", "bfloat", "half", "double"))]
        if not wanted:
            continue
        outside = _read_from_outside(index, plan, calls, cm.call)
        for pos, ref in wanted:
            shape = tuple(int(d) for d in ref.shape)
            for v, readers in outside.items():
                vs = index.shapes.get(v)
                if vs is None or not all(isinstance(d, int) for d in vs) or tuple(vs) == shape \
                        or int(np.prod(vs)) != int(np.prod(shape)):
                    continue
                out.setdefault((cm.call, pos), []).extend(
                    [InputView(cm.call, pos, v, p, shape, readers) for p in _perms(tuple(vs), shape)]
                    or [InputView(cm.call, pos, v, None, shape, readers)])
    return out


def choose(cands: dict[tuple[int, int], list[InputView]], torch_in: TorchInputs,
           resolve: Callable[[list[str]], dict[str, np.ndarray]], distance: Callable[[np.ndarray, np.ndarray], float],
           unrelated: float) -> list[InputView]:
    """The view per input whose content on sample 0 is closest to torch's input; one view per value (a value
    two inputs could be is left alone: the round trip would stand for both)."""
    if not cands:
        return []
    try:
        torch_vals = torch_in(sorted(cands))
        onnx_vals = resolve(sorted({v.value for vs in cands.values() for v in vs}))
    except Exception:  # noqa: BLE001 - no content: nothing is re-paired (the plan stays as mapped)
        return []
    best: dict[tuple[int, int], tuple[float, InputView]] = {}
    for key, views in sorted(cands.items()):
        t = torch_vals.get(key)
        if t is None:
            continue
        t = np.asarray(t, dtype=np.float64)
        for view in views:
            o = onnx_vals.get(view.value)
            if o is None or o.size != t.size:
                continue
            d = distance(view.of(np.asarray(o, dtype=np.float64)), t)
            if d < unrelated and (key not in best or d < best[key][0]):
                best[key] = (d, view)
    by_value: dict[str, list[InputView]] = {}
    for _, view in best.values():
        by_value.setdefault(view.value, []).append(view)
    return [vs[0] for vs in by_value.values() if len(vs) == 1]
