"""Step 1: is the origin real, or an artifact of capturing tensors that are later mutated in place?

A forward hook that keeps the output tensor without ``clone()`` sees it changed by later
in-place ops (``ReLU(inplace=True)`` after BatchNorm, ``out += identity``).  We run one
forward pass (no inference mode, so tensors keep their version counters), record each
output's ``_version`` and a clone at hook time, and after the pass compare.  For the
origin we then measure the error against ONNX Runtime twice: with the clone (what
drifttui does) and with the uncloned tensor (what a naive capture would see).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from drifttui.core.runtime.torch_hooks import Sink, hookable, to_numpy
from drifttui.core.base.metrics import compare
from drifttui.core.result import Step, display_name
from drifttui.core.explain.context import Context, clean

TITLE = "Real or capture artifact"
NORM_WORDS = ("Norm",)


class _VersionSink(Sink):
    def __init__(self) -> None:
        self.seen: dict[int, list[tuple[torch.Tensor, int, torch.Tensor]]] = {}

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        keep = []
        for t in tensors:
            if t.is_floating_point():
                keep.append((t, t._version, t.detach().clone()))
        self.seen[call] = keep


def mutated_outputs(ctx: Context, sample_index: int) -> tuple[dict[int, float], dict[int, tuple[np.ndarray, np.ndarray]]]:
    """-> ({call: max |uncloned - cloned|} for mutated outputs, {call: (cloned, uncloned)} of output 0)."""
    hooks = ctx.new_hooks()
    sink = _VersionSink()
    args, kwargs = ctx.sample(sample_index)
    with hooks.installed(), torch.no_grad():
        hooks.begin(sink)
        ctx.model(*args, **kwargs)
    mutated: dict[int, float] = {}
    pairs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for call, items in sink.seen.items():
        worst = 0.0
        changed = False
        for t, v0, c in items:
            if t._version != v0 or not torch.equal(t, c):
                changed = True
                worst = max(worst, float((t.detach().float() - c.float()).abs().max()) if t.numel() else 0.0)
        if changed:
            mutated[call] = worst
        if items:
            pairs[call] = (to_numpy(items[0][2]), to_numpy(items[0][0]))
    return mutated, pairs


def _symptom(ctx: Context) -> dict[str, Any]:
    """Normalisation layers far off while the convolutions around them agree (the classic artifact look)."""
    layers = ctx.result.layers
    norm_bad, conv_good = [], []
    for L in layers:
        if L.metrics is None:
            continue
        err = L.metrics.max_abs.worst
        if any(w in L.cls for w in NORM_WORDS) and err >= 0.5:
            norm_bad.append(L.module)
        elif L.cls.startswith("Conv") and err <= 1e-4:
            conv_good.append(L.module)
    return {"norm_layers_far_off": norm_bad[:8], "convs_close": len(conv_good),
            "present": bool(norm_bad) and len(conv_good) >= 2}


def run(ctx: Context) -> Step:
    ok, why = hookable(ctx.model)
    if not ok:
        return Step(1, TITLE, "skipped", f"cannot hook the model: {why}", {}, "")
    o = ctx.result.drift_origin
    sample_i = o.worst_sample if o is not None and o.worst_sample >= 0 else 0
    ctx.say("step 1: checking for outputs mutated in place after their hook")
    mutated, pairs = mutated_outputs(ctx, sample_i)
    mut_list = [{"layer": ci, "module": ctx.calls[ci].module, "class": ctx.calls[ci].cls,
                 "uncloned_minus_cloned": d} for ci, d in sorted(mutated.items())]
    evidence: dict[str, Any] = {"mutated_in_place": mut_list[:20], "mutated_count": len(mut_list),
                                "symptom": _symptom(ctx), "sample": sample_i}
    layers = [m["layer"] for m in mut_list[:20]]
    if o is None:
        return Step(1, TITLE, "pass",
                    f"no drift origin to question; {len(mut_list)} module output(s) are mutated in place "
                    "after their hook (drifttui clones at hook time, so they are measured correctly)",
                    clean(evidence), "" if not mut_list else
                    "tools that store hook outputs without clone() would report false drift at these layers",
                    layers)
    L = ctx.result.layers[o.layer]
    value = L.onnx_values[0] if L.onnx_values else None
    if value is None or o.layer not in pairs:
        return Step(1, TITLE, "inconclusive", f"the origin {display_name(o.module)} has no ONNX value to re-measure",
                    clean(evidence), "", [o.layer])
    sess = ctx.ort_session("disable", (value,))
    ort_val = sess.run([value], ctx.feeds(ctx.sample(sample_i)))[0]
    cloned, uncloned = pairs[o.layer]
    tol = ctx.result.tolerance
    s_c = compare(cloned, ort_val, tol.atol, tol.rtol)
    s_u = compare(uncloned, ort_val, tol.atol, tol.rtol)
    in_place = o.layer in mutated
    evidence["origin"] = {"module": o.module, "layer": o.layer, "onnx_value": value,
                          "mutated_after_hook": in_place,
                          "cloned_max_abs": s_c.max_abs, "uncloned_max_abs": s_u.max_abs,
                          "cloned_fails": s_c.fails(), "uncloned_fails": s_u.fails(),
                          "uncloned_minus_cloned": mutated.get(o.layer, 0.0)}
    layers = [o.layer] + [x for x in layers if x != o.layer]
    if s_c.fails():
        summary = (f"the origin {display_name(o.module)} is real: its hook-time (cloned) output differs from ONNX by "
                   f"{s_c.max_abs:.2e} on sample {sample_i}")
        if in_place:
            summary += f"; it is also mutated in place later (an uncloned capture would show {s_u.max_abs:.2e})"
        return Step(1, TITLE, "pass", summary, clean(evidence),
                    "go on with step 2 (zero input) and step 3 (the origin's ONNX node)", layers)
    if s_u.fails():
        return Step(1, TITLE, "fail",
                    f"the origin {display_name(o.module)} is a capture artifact: its cloned output matches ONNX "
                    f"({s_c.max_abs:.2e}) but the tensor is mutated in place after the hook "
                    f"(uncloned {s_u.max_abs:.2e})",
                    clean(evidence), "clone() outputs inside the forward hook (drifttui's own capture does); "
                    "rerun the check", layers)
    return Step(1, TITLE, "inconclusive",
                f"the origin {display_name(o.module)} does not reproduce on sample {sample_i} "
                f"(cloned {s_c.max_abs:.2e}, uncloned {s_u.max_abs:.2e})", clean(evidence),
                "rerun with more samples; the drift may depend on the input", layers)


__all__ = ["run", "mutated_outputs", "TITLE"]
