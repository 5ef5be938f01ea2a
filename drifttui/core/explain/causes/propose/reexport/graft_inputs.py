"""How a re-export of the origin module is tied into the file: the file's value for each of the call's inputs
and outputs, and the inputs the file holds as constants (baked into the re-export) or before a fusion (held).

``variants.try_reexport`` exports the module; this module finds where its inputs come from in the file, so that
``repair`` can graft it in place of the origin's nodes.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.call_structure import same_in_samples, wrapped_root
from drifttui.core.explain.causes.locate.case import Case, torch_values
from drifttui.core.explain.causes.propose.reexport.held_inputs import held_input
from drifttui.core.explain.causes.propose.siblings import produced_value
from drifttui.core.onnx.edit.graft.splice import Graft
from drifttui.core.onnx.io import copy_model
from drifttui.core.runtime.torch_hooks import to_numpy


def graft_for(ctx: Any, case: Case, model: Any, arrays: list[np.ndarray]) -> Any:
    """How ``repair`` puts the re-export into the file: the file's value of each call input and
    output ("" when the file has none: then it cannot be grafted), the origin's nodes to replace."""
    cm = ctx.plan.calls[case.call]
    inputs = [cm.inputs.get(k) or _same_value(case, arrays[k]) or produced_value(ctx, case.call, k)
              or _enclosing_input(ctx, case, arrays[k]) or ""
              for k in range(len(arrays))]
    baked = [k for k, v in enumerate(inputs) if not v and (_is_state(ctx, arrays[k])
                                                           or same_in_samples(ctx, case, k, arrays[k]))]
    scaled = _held(ctx, case, arrays, inputs, baked)
    if baked:
        model = _bake_inputs(model, baked, arrays)
        inputs = [v for k, v in enumerate(inputs) if k not in baked]
    outputs = [cm.outputs.get(k, "") for k in range(len(model.graph.output))]
    return Graft(model, inputs, outputs, list(case.nodes), root=wrapped_root(ctx, case.call), module=case.module,
                 baked=baked, scaled=scaled)


def _held(ctx: Any, case: Case, arrays: list[np.ndarray], inputs: list[str], baked: list[int]) -> dict[int, float]:
    """The inputs with no value of their own that the file holds before a fusion (held_inputs.py), filled in
    ``inputs``; -> their scalars by position among the inputs left after ``baked``."""
    out: dict[int, float] = {}
    for k in [k for k, v in enumerate(inputs) if not v and k not in baked]:
        got = held_input(ctx, case, arrays[k], set(inputs))
        if got is not None:
            inputs[k] = got[0]
            out[k - sum(1 for b in baked if b < k)] = got[1]
    return out


def _enclosing_input(ctx: Any, case: Case, arr: np.ndarray) -> Optional[str]:
    """The file value of an enclosing call's input that holds ``arr``: a call input read only by the
    origin's children (its first child's Gemm reads it) is paired with the outermost call it enters."""
    chain, p = [], ctx.calls[case.call].parent
    while p is not None:
        chain.append(p)
        p = ctx.calls[p].parent
    wanted = {c: sorted(ctx.plan.calls[c].inputs) for c in chain if ctx.plan.calls[c].inputs}
    if not wanted:
        return None
    store = torch_values(ctx, ctx.sample(case.sample), {}, wanted)
    for c, positions in wanted.items():
        for pos in positions:
            t = store.inp.get((c, pos))
            if t is not None and tuple(t.shape) == arr.shape and np.array_equal(to_numpy(t), arr):
                return ctx.plan.calls[c].inputs[pos]
    return None


def _is_state(ctx: Any, arr: np.ndarray) -> bool:
    """``arr`` is a parameter or buffer of the model (a call input the file folded into a constant,
    e.g. a module's ``offsets`` buffer): the same in every sample, so the graft may hold it."""
    root = ctx.modules().get("")
    if root is None:
        return False
    for t in (*root.parameters(), *root.buffers()):
        if tuple(t.shape) == arr.shape and np.array_equal(t.detach().cpu().numpy(), arr):
            return True
    return False


def _bake_inputs(model: Any, positions: list[int], arrays: list[np.ndarray]) -> Any:
    """A copy of ``model`` whose graph inputs at ``positions`` (among the non-initializer inputs)
    are initializers holding ``arrays``."""
    from onnx import numpy_helper

    out = copy_model(model)
    init = {t.name for t in out.graph.initializer}
    feeds = [i for i in out.graph.input if i.name not in init]
    drop = {feeds[k].name for k in positions if k < len(feeds)}
    for k in positions:
        if k < len(feeds):
            out.graph.initializer.append(numpy_helper.from_array(arrays[k], feeds[k].name))
    keep = [i for i in out.graph.input if i.name not in drop]
    del out.graph.input[:]
    out.graph.input.extend(keep)
    return out


def _same_value(case: Case, arr: np.ndarray) -> Optional[str]:
    """The origin's input value that holds ``arr`` (a call input the plan ties to another call's
    output carries the same torch tensor)."""
    hits = [k for k, v in case.feeds.items() if v.shape == arr.shape and np.array_equal(v, arr)]
    return hits[0] if len(hits) == 1 else None
