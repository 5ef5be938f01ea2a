"""A user's file that its own exporter does not write: the file was changed after its export, or another torch made it.

For a file the user gave, the first re-export tried is the origin exported alone by the file's own exporter, at the
file's own opset, on the runtime sizes (``variants.own_variant``).  When that computes what torch computes, nothing
in today's export path is wrong for this call: the exporter, its opset and its lowering all give torch's values.  The
file is then not what that exporter writes, and the cause is not a lowering:

* the file says today's torch made it (its ``producer_version``): it was changed after its export, by a step of the
  deployment pipeline (a graph tool, a conversion, a hand edit).  The fix re-exports, and the step is found by
  checking each step's output against its input (``--reference-onnx``);
* another torch made it: that torch's export computes otherwise, today's does not.  The fix re-exports with
  today's torch.

The class is ``versions`` (the catalogue's class for a file made otherwise than today's exporter makes it); the
story names the node that parts from the re-export, when one does.  Unless the whole model, exported by that exporter
at that opset, computes what the file computes (one export, run on sample 0): then the file is what the exporter
writes, and the module exported alone computes otherwise than exported with its neighbours, which the exporter folds
it into (an eval BatchNorm into the Conv before it).  That is ``in_context``'s story: ``stability`` where torch's own
float32 result is over the tolerance from its float64 value (each side rounds an ill-conditioned computation its
own way: a BatchNorm whose running mean tracks a large offset), else ``lowering`` (the fold computes otherwise).  Before this, such a file was first re-exported
at the next opset and told as "the lowering at that opset is right", where the file's own opset is right too.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.reexport.definitions import Told
from drifttui.core.explain.causes.propose.numerics.conditioning import torch_own_error
from drifttui.core.onnx.graph import full_model
from drifttui.core.prepare.reference import processed_by, run_exporter
from drifttui.core.result import display_name


def _base(version: str) -> str:
    return version.split("+", 1)[0].strip()


def made_by_today(model: Any) -> Optional[bool]:
    """Whether the file's producer is today's torch (True), another torch (False), or the file does not say (None)."""
    import torch

    if (model.producer_name or "").strip() != "pytorch" or not model.producer_version:
        return None
    return _base(model.producer_version) == _base(torch.__version__)


OTHER_WEIGHTS = ("today's export of the module computes what torch computes, but the module changes its own "
                 "parameters or buffers in its forward, so the export bakes other numbers than the file holds: no "
                 "evidence of how the file was made")


def keeps_its_state(module: Any, ins: list[Any]) -> bool:
    """Whether ``module`` leaves its parameters and buffers as they were when run once more on ``ins`` (its state put
    back after).  A module that changes its own state in its forward (``max_norm``'s in-place renorm, BatchNorm's
    running statistics in training mode) has been changed by every forward since the file was exported: today's
    export of it bakes other numbers than the file holds, and its computing torch's values says nothing of how the
    file was made."""
    import torch

    state = list(module.state_dict(keep_vars=True).values())
    saved = [(t, t.detach().clone(), t._version) for t in state if isinstance(t, torch.Tensor)]
    try:
        with torch.no_grad():
            module(*ins)
    except Exception:  # noqa: BLE001 - the re-export ran it already: nothing new is learnt
        return True
    changed = False
    with torch.no_grad():
        for t, copy, version in saved:
            if t._version != version:
                changed = True
                t.copy_(copy)
    return not changed


def whole_export_is_the_file(ctx: Any, export: Callable[[Any, list], Any]) -> bool:
    """Whether the whole model exported by ``export`` computes what the file computes on sample 0 (outputs within
    float32 noise, fed the file's inputs in order); False when that cannot be told."""
    try:
        args, kwargs = ctx.sample(0)
        if kwargs:
            return False
        whole, file = export(ctx.model, list(args)), full_model(ctx.index)
        fed = ctx.feeds(ctx.sample(0))
        names = [i.name for i in file.graph.input if i.name in fed]
        inits = {t.name for t in whole.graph.initializer}
        theirs = [i.name for i in whole.graph.input if i.name not in inits]
        if len(theirs) != len(names) or len(whole.graph.output) != len(file.graph.output):
            return False
        a = run_ort(file, {n: fed[n] for n in names})
        b = run_ort(whole, {w: fed[n] for w, n in zip(theirs, names)})
        pairs = [(np.asarray(a[x.name], np.float64), np.asarray(b[y.name], np.float64))
                 for x, y in zip(file.graph.output, whole.graph.output)]
        return all(x.shape == y.shape and float(np.abs(x - y).max(initial=0.0))
                   <= 1e-6 * max(1.0, float(np.abs(x).max(initial=0.0))) for x, y in pairs)
    except Exception:  # noqa: BLE001 - no whole export, no claim either way
        return False


def in_context(ctx: Any, case: Case, node: Any, made_by: str) -> Told:
    """The story of a module that today's exporter writes otherwise with its neighbours than alone (module docstring)."""
    name, own32 = display_name(case.module), torch_own_error(ctx, case)
    where = f" ({node.op_type} {node.name} computes otherwise)" if node is not None else ""
    said = (f"the file is what its own exporter ({made_by}) writes for the whole model, but exported with its "
            f"neighbours {name} is folded into their nodes (an eval BatchNorm into the Conv before it, a constant "
            f"into the next node) and computed otherwise{where}; exported alone it computes torch's arithmetic; ")
    if own32 is not None:
        return Told("stability", said + (
            f"torch's own float32 result is {own32:.3g} off its float64 value there (over the tolerance): an "
            "ill-conditioned computation each side rounds its own way, the fold included; "),
            "condition the computation (remove a large common offset before it: a BatchNorm whose running mean "
            "tracks a large bias) or compute it in float64; the unfolded export rounds as torch does")
    return Told("lowering", said, f"export {name} without folding it into its neighbours (or report the fold upstream "
                "with `drifttui repro`)")


def edited_story(ctx: Any, case: Case, node: Any, opset: Optional[int],
                 export: Optional[Callable[[Any, list], Any]] = None) -> Told:
    """The ``versions`` story of a verified re-export by the file's own exporter at its own opset (module docstring);
    ``node``: the origin's node whose value the re-export never computes, None when no single node tells;
    ``export``: that exporter on a module and its inputs (the whole model exported so computes the file: no edit)."""
    import torch

    made_by, name = run_exporter(ctx.index, ctx.cfg), display_name(case.module)
    if export is not None and whole_export_is_the_file(ctx, export):
        return in_context(ctx, case, node, made_by)
    at = f" at the file's opset {opset}" if opset else ""
    where = (f"{node.op_type} {node.name} computes otherwise than torch, and " if node is not None else "")
    today = made_by_today(ctx.index.model)
    said = f"{where}the file is not what its own exporter ({made_by}){at} writes for {name}: "
    call = (f"`torch.onnx.export(..., dynamo={made_by == 'dynamo'}"
            f"{f', opset_version={opset}' if opset else ''})`")
    if today is False:
        said += (f"the file says pytorch {_base(ctx.index.model.producer_version)} made it, today's torch is "
                 f"{_base(torch.__version__)}, whose export is right; ")
        fix = f"re-export the model with today's torch ({call} computes what torch computes)"
    else:
        tool = processed_by(ctx.index) if ctx.cfg.onnx else ""
        by = (f"processed by {tool} or another step of the deployment pipeline" if tool else
              "by a step of the deployment pipeline: a graph tool, a conversion, an edit by hand")
        said += (f"it was changed after its export ({by})" + (", and the file says today's torch made it" if today
                                                              else "") + "; ")
        fix = (f"re-export the model ({call} computes what torch computes), then check each step of the pipeline "
               "that rewrote the file (`drifttui check MODEL --onnx STEP_OUTPUT --reference-onnx STEP_INPUT`) to "
               "find the step that changed it")
    return Told("versions", said, fix)
