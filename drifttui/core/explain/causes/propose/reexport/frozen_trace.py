"""The class of a verified re-export when the file is a trace that froze its example input.

A trace records one run of the forward: a Python number taken from a tensor (``.item()``, ``float(t)``, a
``numpy()`` round trip, ``float(x.shape[1])``) becomes a constant, and a Python ``if`` or loop keeps the path
its example took.  The file is then right on inputs like the example and wrong on the others, and a re-export
that computes those in the graph (the dynamo exporter, the module compiled by ``torch.jit.script``, or a
graph edit computing the size at run time) verifies.  That is not a wrong lowering of an op: the mechanism is
the trace.  It is told by what the trace does, without reading the model's code:

1. the origin module traced again by the file's exporter on the worst sample's inputs (with the dims the file
   declares dynamic) computes torch's values on that sample: a trace of this input is right on this input;
2. the same trace run on the same inputs scaled (same shapes, other values: x 4, x 0.25, x -1) differs from
   torch on them, while a trace made on the scaled inputs is right on them: a value was frozen (``custom-module``:
   a number of the forward the file holds otherwise);
3. else, run on a fresh sample's inputs of other shapes, it differs, while a trace made on that sample is right
   on it: a size was frozen (``dynamic-axes``).
The second trace in 2 and 3 tells a trace that depends on its example from a lowering that is merely less
accurate on other values (an overflow at x 4 is in every trace made there too).

Neither: no story of its own (the re-export's story stands).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case, call_io, fresh_indices, origin_case
from drifttui.core.explain.causes.propose.reexport.definitions import Told
from drifttui.core.prepare.reference import run_exporter
from drifttui.core.result import display_name

SCALES = (4.0, 0.25, -1.0)
Export = Callable[[Any, list[Any]], Any]             # (module, inputs) -> the file's exporter's trace
Run = Callable[[Any, list[Any], list[np.ndarray]], Any]   # (model, inputs, expected outputs) -> Eval


def dynamic_dims(ctx: Any, case: Case, ins: list[Any]) -> list[list[int]]:
    """Per call input, the dims the file declares dynamic at the value the plan ties to it (else the one case
    feed holding the same values: an input the plan leaves to the case, as ``repair``'s graft finds it)."""
    cm = ctx.plan.calls[case.call]
    out = []
    for k, t in enumerate(ins):
        value = cm.inputs.get(k) or _feed_of(case, t)
        shape = ctx.index.shapes.get(value or "") or []
        out.append([j for j, d in enumerate(shape) if not isinstance(d, int)])
    return out


def _feed_of(case: Case, t: Any) -> Optional[str]:
    arr = t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
    hits = [k for k, v in case.feeds.items() if v.shape == arr.shape and np.array_equal(v, arr)]
    return hits[0] if len(hits) == 1 else None


def frozen_story(ctx: Any, case: Case, module: Any, ins: list[Any], outs: list[np.ndarray],
                 export: Export, run: Run) -> Optional[Told]:
    """The trace-frozen story of the origin, or None (see the module docstring)."""
    made_by = run_exporter(ctx.index, ctx.cfg)
    dims = dynamic_dims(ctx, case, ins)
    if made_by != "torchscript" and not any(dims):
        return None            # the dynamo exporter freezes no value; without a dynamic dim, no size either
    try:
        trace = export(module, ins)
    except Exception:  # noqa: BLE001 - a module that does not trace alone: no story
        return None
    if not _right(run(trace, ins, outs)):
        return None
    name = display_name(case.module)
    if made_by == "torchscript" and _differs_on_values(module, trace, ins, run, export):
        return Told("custom-module",
                    f"the {made_by} trace of {name} froze a value of its example input: traced again on this "
                    "sample it computes torch's values here, and not on the same inputs scaled (a Python number "
                    "or branch taken from a tensor, .item() / float() / numpy() / if / a loop count, is a "
                    "constant of the trace); ",
                    "compute the value with tensor ops (no .item(), .tolist(), numpy() or Python `if` on a tensor: "
                    "torch.where / torch.cond), or export with the dynamo exporter or the module compiled by "
                    "torch.jit.script")
    if _differs_on_shapes(ctx, case, trace, run, export):
        return Told("dynamic-axes",
                    f"the {made_by} export of {name} froze a size of its example input: exported again on this "
                    "sample it computes torch's values here, and not on a sample of other sizes (a Python number "
                    "or branch taken from a tensor's shape is a constant of the export, though the file declares "
                    "that size dynamic); ",
                    "compute with the size as a tensor (x.shape[1] inside torch ops, torch.where / torch.cond for a "
                    "branch on it), or script the module (torch.jit.script) and export with dynamic_axes")
    return None


def _right(ev: Any) -> bool:
    return ev is not None and ev.ok and not ev.fails


def _own_trace_right(module: Any, ins: list[Any], outs: list[np.ndarray], export: Export, run: Run) -> bool:
    try:
        return _right(run(export(module, ins), ins, outs))
    except Exception:  # noqa: BLE001 - no trace there: no evidence
        return False


def _differs_on_values(module: Any, trace: Any, ins: list[Any], run: Run, export: Export) -> bool:
    import torch

    for scale in SCALES:
        moved = [t * scale if t.dtype.is_floating_point else t for t in ins]
        try:
            with torch.no_grad():
                want = module(*moved)
        except Exception:  # noqa: BLE001 - a forward that refuses the scaled input: no evidence
            continue
        want = [want] if isinstance(want, torch.Tensor) else list(want)
        if not all(isinstance(w, torch.Tensor) for w in want):
            continue
        expected = [w.detach().cpu().numpy() for w in want]
        ev = run(trace, moved, expected)
        if ev is not None and ev.ok and ev.fails:
            return _own_trace_right(module, moved, expected, export, run)
    return False


def _differs_on_shapes(ctx: Any, case: Case, trace: Any, run: Run, export: Export) -> bool:
    shapes = [tuple(a.shape) for a in case.feeds.values()]
    for k in fresh_indices(ctx):
        other = origin_case(ctx, sample=k)
        if other is None or [tuple(a.shape) for a in other.feeds.values()] == shapes:
            continue
        io = call_io(ctx, other)
        if io is None:
            continue
        ev = run(trace, io[0], io[1])
        if ev is not None and ev.ok and ev.fails:
            module = ctx.modules().get(case.module)
            return module is not None and _own_trace_right(module, list(io[0]), io[1], export, run)
    return False
