"""Calls the exporter left with no ONNX node although they compute: their output is the value their
consumer reads (issue 30 point 6).

The TorchScript exporter can drop an in-place update made through a view (``y = x.clone();
y[:, 8:] += 2``): the module's nodes are gone, the value its consumer reads is the module's input
unchanged.  Unmapped, the module cannot be compared; the consumer, fed the wrong values, or the parent
whose nodes are all that is left, is named the origin.  So such a call is given an ``Identity`` in its
own scope (onnx/edit/orphan_steps.py) standing between that value and its readers: it is mapped, its
own error is what the exporter lost, and ``repair`` grafts its re-export there.

Candidates, by structure only: a call below the root with no node, not exported (a parameter it has is read by
no node and was folded into no neighbour: mapping.py tells that case ``fused``), one computed (not handed back)
float output; the value it hands on is the one its consumer reads (a mapped
call's input paired with it), or, when it is its parent's output (the parent hands that very tensor back:
``TensorRef.inner``; a call inside a dynamo file's autocast region, whose nodes carry its parent's scope, is
not), the parent's paired value.  That
value must fit its output's shape and dtype, and no reader may read it transposed (a node-less ``.t()`` whose
Gemm reader took it as ``transA``: its output in another layout, not a lost computation).  A clean module dropped this way (``x.clone()``) computes
its input in torch too: its own error is zero.
"""
from __future__ import annotations

from typing import Callable, Optional

from drifttui.core.onnx.edit.orphan_steps import Step, with_steps
from drifttui.core.onnx.graph import GraphIndex, build_index
from drifttui.core.prepare.plan.absorbed import _reads_transposed
from drifttui.core.prepare.plan.pairing import dtype_ok, shape_ok
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import NOT_EXPORTED
from drifttui.core.runtime.torch_hooks import Call

NOTE = ("no ONNX node of its own although its output is not its input: the exporter dropped its computation "
        "(e.g. an in-place update through a view); compared through an Identity standing for it, between the "
        "value its consumer reads and that consumer")


def _handed_on(index: GraphIndex, calls: list[Call], plan: Plan, ci: int) -> Optional[tuple[str, tuple[int, ...]]]:
    """(the value call ``ci``'s output became in the file, the nodes that read it as that output)."""
    for q in calls:
        for pos, ref in enumerate(q.inputs):
            v = plan.calls[q.index].inputs.get(pos)
            if ref.producer == (ci, 0) and v:
                inside = set(plan.calls[q.index].nodes)
                readers = tuple(r for r in index.consumers.get(v, []) if r in inside)
                if readers:
                    return v, readers
    parent = calls[ci].parent
    last = max((c for c in calls if c.parent == parent), key=lambda c: c.end_order)
    # the parent's output is this call's only when the parent hands that very tensor back: a parent computing on
    # after its last child (a call inside a dynamo file's autocast region, scoped to the parent) is no container
    hands_back = parent is not None and bool(calls[parent].outputs) and calls[parent].outputs[0].inner == (ci, 0)
    v = plan.calls[parent].outputs.get(0) if hands_back and last.index == ci else None
    if v and v in index.graph_outputs and len(calls[parent].outputs) == 1:
        return v, ()
    return None


def steps(index: GraphIndex, calls: list[Call], plan: Plan) -> list[Step]:
    found: list[Step] = []
    for cm in plan.calls:
        call = calls[cm.call]
        if call.parent is None or cm.nodes or cm.status != NOT_EXPORTED \
                or len(call.outputs) != 1 or call.outputs[0].passthrough:
            continue
        ref = call.outputs[0]
        if not ref.dtype.startswith(("float", "bfloat", "half", "double")):
            continue
        got = _handed_on(index, calls, plan, cm.call)
        if got is None or index.producer.get(got[0]) is None or not shape_ok(index.shapes.get(got[0]), ref.shape) \
                or not dtype_ok(index.elem_types.get(got[0]), ref.dtype):
            continue
        if any(_reads_transposed(index, r, got[0]) for r in got[1]):
            continue            # a ``.t()`` the reader's Gemm absorbed (transA): its output in another layout
        found.append(Step(cm.call, call.module, got[0], got[1]))
    return found


def map_orphans(index: GraphIndex, calls: list[Call], plan: Plan,
                map_index: Callable[[GraphIndex], Plan]) -> tuple[GraphIndex, Plan]:
    """(index, plan) with an Identity per orphaned call and the plan mapped again; unchanged when none pairs."""
    found = steps(index, calls, plan)
    if not found:
        return index, plan
    new_index = build_index(with_steps(index.model, found), index.path)
    new_plan = map_index(new_index)
    paired = [s for s in found if new_plan.calls[s.call].outputs]
    if not paired:
        return index, plan
    for s in paired:
        cm = new_plan.calls[s.call]
        cm.note = f"{cm.note}; {NOTE}" if cm.note else NOTE
    return new_index, new_plan
