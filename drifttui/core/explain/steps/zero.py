"""Step 2: zero-input bisect.

Rerun on constant-zero inputs.  Layers whose PyTorch output is then exactly zero or constant
but whose ONNX value still differs point at a structural cause (a bias, a constant, an
attribute) rather than input-dependent arithmetic.  The zero-input origin is compared with
the random-input one.
"""
from __future__ import annotations

from typing import Any

import torch

from drifttui.core.runtime.torch_hooks import Sink, hookable
from drifttui.errors import DriftTuiError
from drifttui.core.result import DRIFT, INHERITED, Step, display_name
from drifttui.core.explain.context import Context, clean

TITLE = "Zero-input bisect"


class _ConstSink(Sink):
    def __init__(self) -> None:
        self.const: dict[int, tuple[bool, float]] = {}   # call -> (all zero, constant value or nan)

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        if not tensors or not tensors[0].is_floating_point() or tensors[0].numel() == 0:
            return
        t = tensors[0].detach().float()
        lo, hi = float(t.min()), float(t.max())
        if lo == hi:
            self.const[call] = (lo == 0.0, lo)


def _zero_sample(ctx: Context) -> Any:
    args, kwargs = ctx.sample(0)
    return (tuple(torch.zeros_like(a) for a in args), {k: torch.zeros_like(v) for k, v in kwargs.items()})


def torch_constants(ctx: Context) -> dict[int, tuple[bool, float]]:
    ok, _ = hookable(ctx.model)
    if not ok:
        return {}
    hooks = ctx.new_hooks()
    sink = _ConstSink()
    args, kwargs = _zero_sample(ctx)
    with hooks.installed(), torch.inference_mode():
        hooks.begin(sink)
        ctx.model(*args, **kwargs)
    return sink.const


def run(ctx: Context) -> Step:
    if ctx.cfg.zero_input:
        return Step(2, TITLE, "skipped", "this run already used zero inputs", {}, "")
    ctx.say("step 2: rerunning on zero inputs")
    try:
        r0 = ctx.rerun(zero_input=True, samples=1)
    except DriftTuiError as exc:    # the run's own inputs passed: zero inputs made it (an all-zero attention mask)
        return Step(2, TITLE, "inconclusive", f"on this step's own zero inputs {exc.problem}",
                    {"zero_input_error": exc.problem},
                    "zero inputs are no test for this model (a mask of zeros masks every position, a norm of zero "
                    "divides by zero); the other steps do not depend on this one")
    consts = torch_constants(ctx)
    stuck = []
    drifting = 0
    for L in r0.layers:
        if L.status not in (DRIFT, INHERITED) or L.metrics is None:
            continue
        drifting += 1
        if L.index in consts:
            zero, value = consts[L.index]
            stuck.append({"layer": L.index, "module": L.module, "class": L.cls, "status": L.status,
                          "torch_value": value, "torch_all_zero": zero, "max_abs": L.metrics.max_abs.worst})
    o0 = r0.drift_origin
    o = ctx.result.drift_origin
    evidence: dict[str, Any] = {
        "zero_verdict": r0.verdict,
        "zero_origin": o0.module if o0 else None, "zero_origin_layer": o0.layer if o0 else None,
        "zero_origin_max_abs": o0.max_abs if o0 else None,
        "random_origin": o.module if o else None, "random_origin_layer": o.layer if o else None,
        "drifting_layers_at_zero": drifting,
        "constant_but_differ": stuck[:20],
        "torch_constant_layers": len(consts),
    }
    layers = ([o0.layer] if o0 else []) + [s["layer"] for s in stuck[:10] if not o0 or s["layer"] != o0.layer]
    if o0 is None and r0.verdict == "ok":
        summary = ("zero inputs give no drift: the drift needs non-trivial data" if ctx.result.verdict == "drift"
                   else "zero inputs give no drift either")
        if o is not None:
            summary += (f" (the origin {display_name(o.module)} combines values in a data-dependent way: interpolation, "
                        "scaling of activations, accumulation)")
        return Step(2, TITLE, "pass", summary, clean(evidence),
                    "look at how the origin's op combines inputs (step 3)" if o else "", layers)
    same = o0 is not None and o is not None and o0.module == o.module
    where = display_name(o0.module) if o0 else "the model outputs"
    summary = f"the drift reproduces on zero inputs at {where}"
    if same:
        summary += " (the same origin as with random inputs)"
    elif o is not None and o0 is not None:
        summary += f" (random inputs name {display_name(o.module)})"
    if stuck:
        summary += f"; {len(stuck)} layer(s) are constant in PyTorch yet differ in ONNX"
    prec = ctx.result.precision
    low = prec is not None and prec.format not in ("", "float32")
    return Step(2, TITLE, "fail", summary, clean(evidence),
                ("a structural difference (weights, biases, constants, attributes such as epsilon), or, in this "
                 f"{prec.format} file, the rounding of values the weights alone make (a bias, a level, a constant "
                 "the origin computes from them): compare the origin's initializers and attributes (steps 3 and 6) "
                 "and its roundings (step 3)") if low else
                "a structural difference (weights, biases, constants, attributes such as epsilon) rather "
                "than rounding: compare the origin's initializers and attributes (steps 3 and 6)", layers)
