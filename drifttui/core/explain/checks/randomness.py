"""A forward that draws random numbers (issue 30, batch 44M): torch differs from itself, so decide names no origin
(``capture/determinism.self_check``); this check says which torch call draws, in which module, and that no graph
edit can make the file draw torch's numbers.

PointNet++'s farthest point sampling starts at ``torch.randint(0, N, (B,))`` on every forward; dropout left active
(``F.dropout(training=True)``) draws a mask.  Every such ATen op carries ``torch.Tag.nondeterministic_seeded``: one
forward of sample 0 under a dispatch mode records them, ``torch_hooks.module_stack`` says whose forward called each.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from drifttui.core.capture.determinism import PREFIX
from drifttui.core.explain.context import Context
from drifttui.core.result import Finding
from drifttui.core.runtime.torch_hooks import module_stack, run_model

CHECK = "custom-module"
RANDOM_NODES = ("RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli", "Multinomial",
                "Dropout")


class _Draws(TorchDispatchMode):
    """Records (module, ATen op) for every seeded random op dispatched while active."""

    def __init__(self, stack: list[str]) -> None:
        super().__init__()
        self.stack, self.hits = stack, []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if torch.Tag.nondeterministic_seeded in getattr(func, "tags", ()) and _draws(func, args, kwargs):
            hit = (self.stack[-1] if self.stack else "", str(func.overloadpacket.__name__))
            if hit not in self.hits:
                self.hits.append(hit)
        return func(*args, **(kwargs or {}))


def _draws(func: Any, args: Any, kwargs: Any) -> bool:
    """False for a call that cannot draw: a dropout's ``train=False`` (``F.dropout(training=False)`` still calls
    ``aten.dropout``)."""
    for k, a in enumerate(func._schema.arguments):
        if a.name == "train":
            v = (kwargs or {}).get("train", args[k] if k < len(args) else None)
            return v is not False
    return True


def random_draws(model: torch.nn.Module, args: tuple, kwargs: dict) -> list[tuple[str, str]]:
    """(module name, ATen op name) of each seeded random op one forward calls, in call order ("" for the root)."""
    with module_stack(model) as stack:
        mode = _Draws(stack)
        with mode:
            run_model(model, args, kwargs)
    return mode.hits


def check(ctx: Context) -> list[Finding]:
    if not any(n.startswith(PREFIX) for n in ctx.result.notes) or not isinstance(ctx.model, torch.nn.Module) \
            or isinstance(ctx.model, torch.jit.ScriptModule):
        return []
    args, kwargs = ctx.sample(0)
    hits = random_draws(ctx.model, args, kwargs)
    if not hits:
        return []
    module = hits[0][0] or None
    ops = ", ".join(f"torch.{op} (aten.{op}) in {m or '(root)'}" for m, op in hits[:4])
    nodes = [n.proto.name or n.op_type for n in ctx.index.nodes if n.op_type in RANDOM_NODES]
    drawn = (f"; the file draws its own numbers ({', '.join(nodes[:3])})" if nodes else
             "; the file holds the numbers the export drew once, as constants")
    return [Finding(CHECK, "error", module, nodes[:8],
                    f"the forward draws random numbers on every call: {ops}{drawn}; torch differs from itself, so "
                    "the file cannot be compared with it and no patch exists: no edit of the ONNX graph draws "
                    "torch's numbers", {"draws": [list(h) for h in hits[:20]], "random_nodes": nodes[:20]},
                    "make the forward deterministic where it is compared and deployed (a fixed start index for "
                    "sampling, dropout off: model.eval()), or compare with seeded draws on both sides",
                    verified=False, kind="model", torch_op=f"torch.{hits[0][1]}", aten_op=f"aten.{hits[0][1]}")]
