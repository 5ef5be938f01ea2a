"""The origin's error in the whole file: a patched copy of the file, cut where the case is fed, run at the levels
a check runs it at.

A patch is tried on the cut-out origin (``case.py``: the origin's nodes alone, their outputs graph outputs, run with
every graph optimisation off).  The file ``repair`` writes is another graph: the whole model, pruned of unread nodes,
its origin outputs read by the next modules, run at the level the user deploys at.  ONNX Runtime's graph transformers
see the two otherwise: a ``Cast(float -> float16)`` kept in the cut-out because an unread rounding Cast reads it is
merged with the int8 Cast after it in the file (its always-on RemoveDuplicateCastTransformer), and a fusion at
``--output-opt-level all`` can compute the patched nodes otherwise than the plain run.  So a patch ``repair`` writes
(a graph edit, a grafted re-export) is also measured where it will run: the whole patched file (as ``repair`` writes
it), each value the case feeds made a graph input fed the same torch-side value (the producer's output renamed away),
the case's expected values that file still makes fetched with its own outputs, at each level a check runs the file
at (the per-layer pass's ``opt_level``, the deployed ``output_opt_level`` with its session settings), with the
run's provider and determinism.  None when that cannot be built or run.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from onnx import helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import Eval, error
from drifttui.core.onnx.io import copy_model
from drifttui.core.runtime import sessions

UPSTREAM = "/drifttui_upstream"


def cut_at_feeds(model: Any, case: Case) -> Optional[Any]:
    """``model`` (a copy, edited in place) with each value the case feeds that a node makes turned into a graph input
    (the node's output renamed away, so every reader reads the fed value); None when the file makes none of the
    case's expected values (a graft keeps the call's outputs, not the inner values a widened case compares)."""
    made = {v for n in model.graph.node for v in n.output if v}
    inputs = {i.name for i in model.graph.input}
    if not set(case.expected) & (made | inputs):
        return None
    cut = [v for v in case.feeds if v in made and v not in inputs]
    for n in model.graph.node:
        n.output[:] = [v + UPSTREAM if v in cut else v for v in n.output]
    for v in cut:
        arr = np.asarray(case.feeds[v])
        model.graph.input.append(helper.make_tensor_value_info(v, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                                               list(arr.shape)))
    return model


def levels(cfg: Any) -> list[tuple[str, tuple]]:
    """The ONNX Runtime levels a check runs the file at: the per-layer pass's (``opt_level``) and the deployed
    output pass's (``output_opt_level``, with its session settings), each once."""
    return list(dict.fromkeys([(cfg.opt_level, ()), (cfg.output_opt_level, tuple(cfg.session))]))


def file_errors(ctx: Any, patched: Any, cases: list[Case]) -> Optional[list[tuple[str, Eval]]]:
    """(level, the origin's error) in ``patched`` (a whole file, not edited) on each of ``cases`` (one origin,
    several samples) at each level a check runs it at (``levels``); None when the cut file cannot be built or
    run."""
    model = cut_at_feeds(copy_model(patched), cases[0]) if cases else None
    if model is None:
        return None
    made = {v for n in model.graph.node for v in n.output if v} | {i.name for i in model.graph.input}
    cfg, out = ctx.cfg, []
    try:
        for level, settings in levels(cfg):
            sess = sessions.make_session(model, level, cfg.deterministic, cfg.provider, ctx.workdir, "in_file.onnx",
                                         extra_outputs=tuple(v for v in cases[0].expected if v in made),
                                         data_dir=ctx.index.data_dir, prepack=False, settings=settings)
            names = {i.name for i in sess.get_inputs()}
            for case in cases:
                want = {v: a for v, a in case.expected.items() if v in made}
                feeds = {**ctx.feeds(ctx.sample(case.sample)), **case.feeds}
                vals = sessions.run(sess, {k: v for k, v in feeds.items() if k in names}, list(want))
                out.append((level, error(vals, want, case.atol, case.rtol)))
    except Exception:  # noqa: BLE001 - a file ONNX Runtime will not run cut so: no whole-file evidence
        return None
    return out
