"""Re-export patches: the origin module alone, exported on its captured inputs.

If the origin module, exported by itself with the other exporter (or, for a file the user
gave, with today's exporters on the runtime input shapes), computes what torch computes in
ONNX Runtime, the cause is the export path of the file under test and the fix names the
export that works.  Costs one small export per variant; tried only when no graph patch
verifies.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.case import Case, torch_values
from drifttui.core.explain.causes.evaluate import Eval, error, run_ort
from drifttui.core.explain.causes.patches import Patch
from drifttui.core.model.export import export_model
from drifttui.core.runtime.torch_hooks import TensorStore, to_numpy
from drifttui.errors import DriftTuiError


def _call_io(ctx: Any, case: Case) -> Optional[tuple[list[Any], list[np.ndarray]]]:
    call = ctx.calls[case.call]
    store: TensorStore = torch_values(ctx, ctx.sample(case.sample), {case.call: list(range(len(call.outputs)))},
                                       {case.call: list(range(len(call.inputs)))})
    ins = [store.inp.get((case.call, k)) for k in range(len(call.inputs))]
    outs = [store.out.get((case.call, k)) for k in range(len(call.outputs))]
    if any(t is None for t in ins) or any(t is None for t in outs) or not ins:
        return None
    return ins, [to_numpy(t) for t in outs]


def variants(ctx: Any) -> list[tuple[str, str]]:
    """(exporter, why) to try: the other exporter, or both for a file the user exported."""
    if ctx.cfg.onnx:
        return [("dynamo", "today's dynamo exporter on the runtime input shapes"),
                ("torchscript", "the TorchScript exporter on the runtime input shapes")]
    other = "torchscript" if ctx.cfg.exporter == "dynamo" else "dynamo"
    return [(other, f"the {other} exporter")]


def try_reexport(ctx: Any, case: Case, exporter: str, why: str) -> tuple[Optional[Patch], Eval]:
    module = ctx.modules().get(case.module)
    io = _call_io(ctx, case)
    if module is None or io is None:
        return None, Eval(float("inf"), True, False, "the origin's inputs could not be captured")
    ins, outs = io
    with tempfile.TemporaryDirectory(prefix="drifttui-reexport-") as d:
        try:
            path = export_model(module, tuple(ins), {}, exporter, Path(d), "origin.onnx")
            import onnx

            model = onnx.load(str(path))
        except (DriftTuiError, Exception) as exc:  # noqa: BLE001 - a module that does not export alone
            return None, Eval(float("inf"), True, False, str(exc)[:200])
    feeds_names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    feeds = {n: t.detach().cpu().numpy() for n, t in zip(feeds_names, ins)}
    try:
        got = run_ort(model, feeds)
    except Exception as exc:  # noqa: BLE001
        return None, Eval(float("inf"), True, False, str(exc)[:200])
    names = [o.name for o in model.graph.output]
    ev = error({f"o{k}": got[n] for k, n in enumerate(names)}, {f"o{k}": a for k, a in enumerate(outs)},
               case.atol, case.rtol)
    opset = next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), None)
    spec = {"op": "reexport", "module": case.module, "exporter": exporter, "opset": opset,
            "input_shapes": [list(t.shape) for t in ins]}
    patch = Patch(spec, "versions" if ctx.cfg.onnx else "op-compat", f"{case.module} exported alone with {why} (opset {opset}) computes what torch "
                  "computes", f"export with --exporter {exporter}" + (f" at opset {opset}" if opset else "")
                  + (" and dynamic shapes for the sizes that change at run time" if ctx.cfg.onnx else ""),
                  "export", module=case.module)
    return patch, ev
